"""Asks the served model once with the OpenAI client and prints the reply."""

# __client_start__
from openai import OpenAI

client = OpenAI(base_url="http://127.0.0.1:8000/v1", api_key="not-used")
response = client.chat.completions.create(
    model="mock-model",
    messages=[{"role": "user", "content": "Say hello."}],
)
print("Reply:", response.choices[0].message.content)
# __client_end__
