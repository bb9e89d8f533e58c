"""A declaration-only tool: a `FunctionTool` with a name, a description and a schema but
no function. The model may call it, the agent cannot run it, so the call comes back to
the caller (in `result.user_input_requests`); the caller runs it itself and sends the
result back.
"""

import asyncio
import json

from minagent import Agent, Content, FunctionTool, Message
from minagent.testing import ScriptedChatClient, call

read_sensor = FunctionTool(
    name="read_sensor",
    description="Read a sensor of the greenhouse controller (runs on the device, not in the agent).",
    parameters={
        "type": "object",
        "properties": {"sensor": {"type": "string"}},
        "required": ["sensor"],
    },
)


def greenhouse_model(messages, options):
    last = messages[-1]
    if last.role == "tool":
        return f"The soil moisture is {last.contents[0].result}."
    return [call("read_sensor", {"sensor": "soil_moisture"}, call_id="call_sensor_1")]


async def main() -> None:
    agent = Agent(
        client=ScriptedChatClient([greenhouse_model] * 2),
        name="Greenhouse",
        instructions="Answer questions about the greenhouse.",
        tools=[read_sensor],
    )
    question = "How wet is the soil?"
    result = await agent.run(question)

    (pending,) = result.user_input_requests
    print(f"Pending call: {pending.name}({pending.arguments}) id={pending.call_id}")
    reading = {"soil_moisture": "38%"}[json.loads(pending.arguments)["sensor"]]

    answer = Message(
        "tool", [Content.from_function_result(pending.call_id, result=reading)]
    )
    result = await agent.run([Message("user", [question]), *result.messages, answer])
    print(f"Greenhouse: {result}")


if __name__ == "__main__":
    asyncio.run(main())
