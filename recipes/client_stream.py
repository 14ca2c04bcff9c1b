"""Stream one chat response from the server that serve_npu.py or docker-compose.yaml starts."""

from openai import OpenAI

# __stream_start__
# The client sends the key in OPENAI_API_KEY; the server must have the same key.
client = OpenAI(base_url="http://127.0.0.1:8000/v1")

stream = client.chat.completions.create(
    model="deepseek-v4-flash",
    messages=[{"role": "user", "content": "Explain prefill and decode in two sentences."}],
    max_tokens=256,
    stream=True,
)
model = None
for chunk in stream:
    if model is None:
        model = chunk.model
        print(f"model: {model}")
    # The last chunk can carry no choices (usage only).
    if chunk.choices and chunk.choices[0].delta.content:
        print(chunk.choices[0].delta.content, end="", flush=True)
print()
# __stream_end__
