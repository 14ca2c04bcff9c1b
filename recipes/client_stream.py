"""Stream one chat response from the server that serve_npu.py or docker-compose.yaml starts."""

import os

from openai import OpenAI

# __stream_start__
client = OpenAI(
    base_url="http://127.0.0.1:8000/v1",
    api_key=os.environ.get("OPENAI_API_KEY", "not-used"),
)

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
