"""Send one chat request to the server that serve_npu.py or docker-compose.yaml starts."""

from openai import OpenAI

# __client_start__
# The client sends the key in OPENAI_API_KEY; the server must have the same key.
client = OpenAI(base_url="http://127.0.0.1:8000/v1")

response = client.chat.completions.create(
    model="deepseek-v4-flash",
    messages=[{"role": "user", "content": "Who are you?"}],
    max_tokens=256,
    temperature=0,
)
print(f"model: {response.model}")
print(response.choices[0].message.content)
# __client_end__
