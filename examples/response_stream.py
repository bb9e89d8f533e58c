"""`ResponseStream` on its own, without an agent: the ways to consume one and the hooks.

A stream wraps an async iterable of updates and a finalizer that turns the updates into
one response. It can be iterated and then finalised, or finalised directly; transform
hooks rewrite what the consumer sees, cleanup hooks run once when it ends, result hooks
rewrite the final response, and `map` layers a new stream over it without reading the
source twice.
"""

import asyncio

from minagent import ChatResponse, ChatResponseUpdate, Content, Message, ResponseStream

source_starts = 0


async def countdown():
    global source_starts
    source_starts += 1
    for piece in ("3.. ", "2.. ", "1.. ", "liftoff!"):
        await asyncio.sleep(0)
        yield ChatResponseUpdate(contents=[Content.from_text(piece)], role="assistant")


def launch() -> ResponseStream:
    return ResponseStream(countdown(), finalizer=ChatResponse.from_updates)


async def main() -> None:
    print("1. iterate, then finalise:")
    stream = launch()
    async for update in stream:
        print(f"   update {update.text!r}")
    print(f"   final {(await stream.get_final_response()).text!r}")

    print("2. finalise without iterating:")
    stream = launch()
    final = await stream.get_final_response()
    print(f"   final {final.text!r} from {len(stream.updates)} updates")

    print("3. transform hooks, applied in order:")
    stream = ResponseStream(
        countdown(),
        finalizer=ChatResponse.from_updates,
        transform_hooks=[
            lambda update: ChatResponseUpdate(
                contents=[Content.from_text(update.text.strip())], role="assistant"
            ),
            lambda update: ChatResponseUpdate(
                contents=[Content.from_text(update.text.upper())], role="assistant"
            ),
        ],
    )
    print(f"   seen {[update.text async for update in stream]}")
    print(f"   final is untouched: {(await stream.get_final_response()).text!r}")

    print("4. a cleanup hook:")
    stream = launch().with_cleanup_hook(lambda: print("   cleanup ran"))
    async for _ in stream:
        pass
    print("   after the loop")

    print("5. result hooks:")
    stream = launch().with_result_hook(
        lambda response: ChatResponse(
            messages=[Message("assistant", [response.text + " (T+0)"])]
        )
    )
    print(f"   final {(await stream.get_final_response()).text!r}")

    print("6. map to another kind of update and final response:")
    inner = launch()
    outer = inner.map(
        lambda update: f"<{update.text.strip()}>",
        lambda pieces: " ".join(pieces),
    )
    print(f"   seen {[piece async for piece in outer]}")
    print(f"   final {await outer.get_final_response()!r}")
    print(f"   inner final {(await inner.get_final_response()).text!r}")
    print(f"   the countdown source was started {source_starts} times for 6 streams")


if __name__ == "__main__":
    asyncio.run(main())
