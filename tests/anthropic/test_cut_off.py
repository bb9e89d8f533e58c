"""A streamed tool call cut off by ``max_tokens`` over the loopback Messages server
(AN-25)."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from minagent import Agent, AgentSession, tool

from ._fake_server import FakeAnthropic, event, send_chunks


@tool
def get_weather(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {city}"


def cut_off_stream() -> Any:
    """A tool_use whose input stops in the middle of a string, with stop_reason
    max_tokens."""
    start = {
        "id": "msg_cut",
        "type": "message",
        "role": "assistant",
        "model": "m",
        "content": [],
        "stop_reason": None,
        "usage": {"input_tokens": 3, "output_tokens": 1},
    }
    block = {"type": "tool_use", "id": "toolu_cut", "name": "get_weather", "input": {}}
    data = b"".join(
        [
            event("message_start", {"message": start}),
            event("content_block_start", {"index": 0, "content_block": block}),
            event(
                "content_block_delta",
                {
                    "index": 0,
                    "delta": {"type": "input_json_delta", "partial_json": '{"ci'},
                },
            ),
            event(
                "content_block_delta",
                {
                    "index": 0,
                    "delta": {"type": "input_json_delta", "partial_json": 'ty": "Pa'},
                },
            ),
            event("content_block_stop", {"index": 0}),
            event(
                "message_delta",
                {
                    "delta": {"stop_reason": "max_tokens"},
                    "usage": {"output_tokens": 20},
                },
            ),
            event("message_stop", {}),
        ]
    )

    async def handler(
        server: FakeAnthropic, request: web.Request, _body: dict[str, Any]
    ) -> web.StreamResponse:
        return await send_chunks(request, data)

    return handler


async def test_a_call_cut_off_by_max_tokens_gets_an_error_result_and_the_run_goes_on(
    stream: bool,
) -> None:
    """AN-25, LP-6: the model gets an error result for the call it could not finish, the
    next request carries the call as tool_use input {} with that result, and the run
    ends normally; a later run on the same session (in either mode) sends the same
    history again without failing."""
    async with FakeAnthropic() as server:
        server.add(cut_off_stream())
        server.script_text("Sorry, I was cut off.")
        server.script_text("Paris it is.")
        async with server.make_client(max_retries=0) as client:
            agent = Agent(client, tools=[get_weather])
            session = AgentSession()
            first = agent.run("weather in Paris?", stream=True, session=session)
            async for _ in first:
                pass
            assert (await first.get_final_response()).text == "Sorry, I was cut off."
            if stream:
                second = agent.run("try again", stream=True, session=session)
                async for _ in second:
                    pass
                answer = (await second.get_final_response()).text
            else:
                answer = (await agent.run("try again", session=session)).text
        assert answer == "Paris it is."
        requests = server.requests()
    assert len(requests) == 3
    for body in requests[1:]:
        call, result = (
            body["messages"][1]["content"][0],
            body["messages"][2]["content"][0],
        )
        assert call == {
            "type": "tool_use",
            "id": "toolu_cut",
            "name": "get_weather",
            "input": {},
        }
        assert result["tool_use_id"] == "toolu_cut"
        assert result["is_error"] is True
        assert result["content"].startswith(
            "Error: Argument parsing failed. Invalid arguments for get_weather: arguments are not valid JSON"
        )
