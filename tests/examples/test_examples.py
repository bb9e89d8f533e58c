"""The programs in `examples/` run offline and print what their scenario promises.

Each example is a program of ours, written the way upstream users write (upstream's
names, middleware with or without annotations, `print` of responses) for a scenario that
one of upstream's samples demonstrates (`examples/README.md` names the sample). The
model is a `ScriptedChatClient` whose steps are functions of what they are sent, so what
an example prints shows what the model received. Every test runs one example as `python
examples/<name>.py` (the project root as working directory, no provider key in the
environment) and compares its whole output line by line: a `str` must equal the line, a
compiled pattern must match all of it (only for timings).

An example whose scenario needs a name the core does not have yet is marked
`xfail(strict=True)` with the item of issue 26 that adds it: its expected output is what
the same program prints on upstream (agent-framework-core 1.23.0); once the core has the
name the XPASS turns the suite red so that the mark is removed.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

from minagent import Agent, FunctionInvocationContext, function_middleware, tool
from minagent.testing import ScriptedChatClient, call

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"

Line = str | re.Pattern[str]


def _offline_env() -> dict[str, str]:
    """This checkout first on the path, utf-8 output, and no provider keys (nothing
    could reach a service)."""
    env = {
        key: value for key, value in os.environ.items() if not key.endswith("_API_KEY")
    }
    env["PYTHONPATH"] = str(ROOT)
    env["PYTHONIOENCODING"] = "utf-8"
    return env


def run_example(name: str, stdin: str | None = None) -> list[str]:
    """Run examples/<name>.py as `python examples/<name>.py` and return its output
    lines."""
    proc = subprocess.run(
        [sys.executable, str(Path("examples") / f"{name}.py")],
        cwd=ROOT,
        input=stdin,
        capture_output=True,
        text=True,
        encoding="utf-8",
        env=_offline_env(),
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, (
        f"examples/{name}.py exited with {proc.returncode}:\n{proc.stderr[-3000:]}"
    )
    # the one line a tool that raises logs (OB-30) is what an example with a failing
    # tool should print; anything else on stderr is a fault of the example
    unexpected = [
        line
        for line in proc.stderr.splitlines()
        if not (
            line.startswith("Function '")
            and "returning an error result to the model" in line
        )
    ]
    assert unexpected == [], (
        f"examples/{name}.py wrote to stderr:\n{proc.stderr[-3000:]}"
    )
    return proc.stdout.splitlines()


def assert_output(lines: list[str], expected: list[Line]) -> None:
    """Every line as expected, and no line more or less."""
    for number, (line, want) in enumerate(zip(lines, expected, strict=False), 1):
        if isinstance(want, str):
            assert line == want, f"line {number}: {line!r} != {want!r}"
        else:
            assert want.fullmatch(line), (
                f"line {number}: {line!r} does not match {want.pattern!r}"
            )
    assert len(lines) == len(expected), (
        f"{len(lines)} lines printed, {len(expected)} expected:\n" + "\n".join(lines)
    )


def check(name: str, expected: list[Line], stdin: str | None = None) -> None:
    assert_output(run_example(name, stdin), expected)


# --- first steps ------------------------------------------------------------------------------


def test_hello_agent() -> None:
    """AG-2, AG-3, TY-6: a run awaited and printed with f"{result}" (the instructions
    reached the model), and a run streamed update by update."""
    check(
        "hello_agent",
        [
            "Stargazer: Jupiter spins fastest: a day there lasts under ten hours.",
            "Stargazer (streamed): Saturn |is |light |enough |to |float.|",
        ],
    )


def test_add_tools() -> None:
    """TL-1, LP-4: a @tool with Annotated[..., Field(description=...)] parameters is
    offered to the model, called with the arguments the model chose, and its result sent
    back, in both modes."""
    check(
        "add_tools",
        [
            "RailHelper: Here you go. Direct trains from Utrecht to Leiden: 07:48, 08:18, 08:48.",
            "RailHelper (streamed): Here you go. Direct trains from Leiden to Delft: 09:05, 09:35.",
        ],
    )


def test_multi_turn() -> None:
    """TH-1, AG-11: client.as_agent(...) and get_new_thread(): the thread sends the
    first turn along with the second (three messages), a run without the thread sends
    only its own question."""
    check(
        "multi_turn",
        [
            "User: My dog is called Biscuit and she loves the beach.",
            "PetPal: What a lovely name for a dog!",
            "User: What is my dog called?",
            "PetPal: Your dog is called Biscuit. (I was sent 3 messages.)",
            "User (no thread): What is my dog called?",
            "PetPal: You haven't told me about your dog.",
        ],
    )


def test_multi_turn_session() -> None:
    """SE-1, SE-8: create_session() and run(..., session=): each session carries its own
    history, two interleaved sessions on one agent never mix."""
    check(
        "multi_turn_session",
        [
            "Ada: I'm reading Middlemarch.",
            "Librarian: Noted, enjoy your reading.",
            "Ben: I'm reading Dune.",
            "Librarian: Noted, enjoy your reading.",
            "Ada: Which book am I reading?",
            "Librarian: You're reading Middlemarch.",
            "Ben: Which book am I reading?",
            "Librarian: You're reading Dune.",
        ],
    )


def test_memory() -> None:
    """AG-12, SE-10: Agent(context_provider=...) is refused with what to write; a
    provider with the thread-era invoking/invoked hooks, given in
    context_providers=[...], adds instructions before each run and learns from the input
    after it."""
    check(
        "memory",
        [
            "Refused: Agent() got context_provider=: pass a list: context_providers=[...]",
            "User: Hi there!",
            "Agent: Happy to help! What should I call you?",
            "User: Call me Sam.",
            "Agent: Noted!",
            "User: What is 12 times 12?",
            "Agent: Sure thing, Sam: 12 times 12 is 144.",
            "Remembered nickname: Sam",
        ],
    )


def test_memory_session() -> None:
    """SE-3, SE-4: before_run/after_run keep the provider's memory in its own entry of
    session.state; another session of the same agent knows nothing of it."""
    check(
        "memory_session",
        [
            "User: I am vegan.",
            "Chef: Thanks, I'll keep that in mind.",
            "User: What should I cook tonight?",
            "Chef: Try a chickpea and spinach curry.",
            "User: What should I cook tonight?",
            "Chef: Try a lamb tagine.",
            "Diet in my session: vegan",
            "Diet in my friend's session: unknown",
        ],
    )


# --- middleware -------------------------------------------------------------------------------


def test_function_based_middleware() -> None:
    """MW-2, MW-7: annotated function middleware; an agent middleware that returns
    without call_next ends the run with an empty response (no model call); a function
    middleware wraps the tool call."""
    check(
        "function_based_middleware",
        [
            "User: Where can I find The Hobbit?",
            "[tools] find_book({'title': 'The Hobbit'})",
            re.compile(r"\[tools\] find_book answered in \d+\.\d{4}s"),
            "Librarian: The Hobbit: shelf F-12, 2 copies available.",
            "User: Send the list of my loans to jo@example.org",
            "[privacy] request contains an e-mail address: not sent to the model",
            "Librarian: (no answer)",
        ],
    )


def test_class_based_middleware() -> None:
    """MW-1, MW-2, MW-6: instances of AgentMiddleware / FunctionMiddleware with an
    un-annotated process(); an agent middleware that sets context.result answers without
    the model; a function middleware sees the tool's result after call_next."""
    check(
        "class_based_middleware",
        [
            "User: How much is in my savings?",
            "Teller: Your savings account holds 1,250.00 EUR.",
            "User: Transfer 100 EUR to my landlord.",
            "[guard] payment request answered without the model",
            "Teller: I can only read balances; please ask a banker to move money.",
            "Audit trail:",
            "  balance {'account': 'savings'} -> 1,250.00 EUR",
        ],
    )


def test_decorator_middleware() -> None:
    """MW-2, MW-4, TL-5: @agent_middleware / @function_middleware mark un-annotated
    functions; the agent layer wraps the function layer; the tool's int result reaches
    the middleware as it was returned."""
    check(
        "decorator_middleware",
        [
            "> run starts (1 message)",
            "  > count_vowels {'word': 'onomatopoeia'}",
            "  < count_vowels returned 8",
            "< run ends: \"'Onomatopoeia' has 8 vowels.\"",
            "Wordsmith: 'Onomatopoeia' has 8 vowels.",
        ],
    )


def test_chat_middleware() -> None:
    """LP-3, MW-4, MW-6: chat middleware runs once per model call inside the tool loop;
    a run-level chat middleware that rewrites the messages changes what each call is
    sent, not what the session keeps; one that sets context.result and raises
    MiddlewareTermination answers without a model call, after the agent-level one
    (outer) has run."""
    check(
        "chat_middleware",
        [
            "User: What is the French word for cat?",
            "  [model call 1] sent: user",
            "  [model call 2] sent: user, assistant, tool",
            "Translator: That is 'chat'.",
            "User (run-level middleware): What is the French word for cat?",
            "  [model call 3] sent: user",
            "  [model call 4] sent: user, assistant, tool",
            "Translator: That is 'Katze'.",
            "The session keeps what the user wrote: What is the French word for cat?",
            "User (run-level middleware): Translate my homework for me?",
            "  [model call 5] sent: user",
            "Translator: Nice try! Do your homework yourself.",
            "Model calls seen by the agent's chat middleware: 5",
        ],
    )


def test_agent_and_run_level_middleware() -> None:
    """MW-4, AG-2: agent-level middleware wraps run-level middleware (metadata set
    outside is seen inside; the agent's guard stops a run before the run's cache sees
    it); a run-level cache that sets context.result skips the agent: five runs, three
    reach the model (six model calls)."""
    check(
        "agent_and_run_level_middleware",
        [
            "--- run 1, run-level middleware: []",
            "User: What does ACME trade at?",
            "[tool] quote {'symbol': 'ACME'}",
            "Broker: ACME last traded at 41.50 USD.",
            "--- run 2, run-level middleware: ['show_metadata']",
            "User: What does GLOBEX trade at?",
            "[run] metadata seen: {'checked_by': 'TradingHours'}",
            "[tool] quote {'symbol': 'GLOBEX'}",
            "Broker: GLOBEX last traded at 12.25 USD.",
            "--- run 3, run-level middleware: ['AnswerCache']",
            "User: What does ACME trade at?",
            "[cache] miss",
            "[tool] quote {'symbol': 'ACME'}",
            "Broker: ACME last traded at 41.50 USD.",
            "--- run 4, run-level middleware: ['AnswerCache']",
            "User: What does ACME trade at?",
            "[cache] hit",
            "Broker: ACME last traded at 41.50 USD.",
            "--- run 5, run-level middleware: ['AnswerCache']",
            "User: Buy 10 ACME for me.",
            "[hours] orders are not taken here",
            "Broker: (nothing)",
            "Model calls made: 6",
        ],
    )


def test_middleware_termination() -> None:
    """MW-6, MW-7: MiddlewareTermination(result=...) before call_next answers with that
    result (design decision 5: upstream 1.23.0 ignores the exception's result); without
    a result the run ends with an empty response; neither reaches the model."""
    check(
        "middleware_termination",
        [
            "tomatoes -> About 'tomatoes': water in the early morning.",
            "politics in the allotment committee -> Sorry, I don't discuss politics.",
            "roses -> About 'roses': water in the early morning.",
            "[quota] used up",
            "lavender -> (empty response)",
            "Model calls made: 2",
        ],
    )


def test_exception_handling_with_middleware() -> None:
    """LP-6, MW-6: a function middleware catches the exception the tool raised and sets
    context.result; the model is sent that result, not an error."""
    check(
        "exception_handling_with_middleware",
        [
            "[fallback] exchange_rate failed: rates service unreachable",
            "Cashier: The rates service is down right now; please try again in a few minutes.",
            "The model was sent: 'UNAVAILABLE: tell the user to try again in a few minutes.'",
        ],
    )


def test_shared_state_middleware() -> None:
    """MW-2, MW-4: bound methods of one object as annotated function middleware share
    its state; the first registered is outer, and the inner one's rewrite of
    context.result is what the model gets."""
    check(
        "shared_state_middleware",
        [
            "User: How far is 42.2 km in miles?",
            "Converter: #1: 42.2 km = 26.2 miles",
            "User: What is 20 kg in pounds?",
            "Converter: #2: 20.0 kg = 44.1 lb",
            "User: And 5 km?",
            "Converter: #3: 5.0 km = 3.1 miles",
            "Conversions counted: 3",
        ],
    )


def test_usage_tracking_middleware() -> None:
    """LP-18, MW-10, TY-12: chat middleware sees each model call's usage, from
    context.result without streaming and from the usage update through a stream
    transform hook when streaming; the run's usage is the sum, the same in both
    modes."""
    per_call = ["in=40 out=12 total=52", "in=75 out=20 total=95"]
    check(
        "usage_tracking_middleware",
        [
            "Without streaming:",
            f"  [model call] {per_call[0]}",
            f"  [model call] {per_call[1]}",
            "Editor: That sentence has 5 words.",
            "  [whole run] in=115 out=32 total=147",
            "Streaming:",
            f"  [model call, streamed] {per_call[0]}",
            "Editor: That sentence has 5 words.",
            f"  [model call, streamed] {per_call[1]}",
            "  [whole run] in=115 out=32 total=147",
        ],
    )


def test_runtime_context_delegation() -> None:
    """LP-25, AG-8, SC-5: function_invocation_kwargs reach
    FunctionInvocationContext.kwargs (middleware checks them, a tool's injected ctx
    reads what the middleware added) and never the model; as_tool passes them on to the
    sub-agent's run, whose own middleware sees them."""
    check(
        "runtime_context_delegation",
        [
            "One agent:",
            "[auth] open_ticket: token of alice",
            "  helpdesk: ticket opened for alice: Printer on floor 2 jams",
            "[auth] open_ticket: rejected token 'tok-wrong'",
            "  helpdesk: refused: the caller is not authenticated",
            "Through a coordinator that uses the helpdesk as a tool:",
            "[auth] open_ticket: token of bob",
            "  coordinator: ticket opened for bob: VPN drops every hour",
            "[auth] open_ticket: rejected token 'tok-wrong'",
            "  coordinator: refused: the caller is not authenticated",
            "A token in anything the model was sent: False",
        ],
    )


def test_override_result_with_middleware() -> None:
    """MW-9, MW-10, ST-12, TY-6: client chat middleware replaces the model's result (a
    ResponseStream of its own when streaming); agent middleware rewrites the response,
    or the streamed updates with a transform hook and the final response with a result
    hook; AgentResponse.text joins the messages' texts with no separator."""
    notice = "Bookings are paused until 14:00 for maintenance. (Front desk)"
    check(
        "override_result_with_middleware",
        [
            f"FrontDesk: {notice}",
            "FrontDesk (streamed): Bookings are paused |until 14:00 |for maintenance.|",
            f"Final response: {notice}",
        ],
    )


# --- ResponseStream ---------------------------------------------------------------------------


def test_response_stream() -> None:
    """ST-3, ST-4, ST-5, ST-6, ST-10, ST-11: iterate then finalise; finalise alone;
    transform hooks in order (the final response untouched); a cleanup hook; result
    hooks; map() to other types over a source read once."""
    check(
        "response_stream",
        [
            "1. iterate, then finalise:",
            "   update '3.. '",
            "   update '2.. '",
            "   update '1.. '",
            "   update 'liftoff!'",
            "   final '3.. 2.. 1.. liftoff!'",
            "2. finalise without iterating:",
            "   final '3.. 2.. 1.. liftoff!' from 4 updates",
            "3. transform hooks, applied in order:",
            "   seen ['3..', '2..', '1..', 'LIFTOFF!']",
            "   final is untouched: '3.. 2.. 1.. liftoff!'",
            "4. a cleanup hook:",
            "   cleanup ran",
            "   after the loop",
            "5. result hooks:",
            "   final '3.. 2.. 1.. liftoff! (T+0)'",
            "6. map to another kind of update and final response:",
            "   seen ['<3..>', '<2..>', '<1..>', '<liftoff!>']",
            "   final '<3..> <2..> <1..> <liftoff!>'",
            "   inner final '3.. 2.. 1.. liftoff!'",
            "   the countdown source was started 6 times for 6 streams",
        ],
    )


# --- tools ------------------------------------------------------------------------------------


def test_function_tool_with_kwargs() -> None:
    """SC-5, LP-25: a parameter annotated FunctionInvocationContext is injected (the
    model calls the tool with `limit` only); its kwargs are the run's
    function_invocation_kwargs, different per run."""
    check(
        "function_tool_with_kwargs",
        [
            "ShopAssistant: Your recent orders: cust-17: 2 x espresso beans; 1 x milk frother",
            "ShopAssistant: Your recent orders: cust-42: 1 x teapot",
        ],
    )


def test_function_invocation_configuration() -> None:
    """LP-1, LP-24, LP-6, LP-7: the client's configuration set and read item-wise;
    include_detailed_errors puts the exception in the result the model reads; after
    max_iterations rounds one last call is made with tool_choice="none" (four model
    calls)."""
    check(
        "function_invocation_configuration",
        [
            "include_detailed_errors = True",
            "max_iterations = 3",
            "Calculator: The tool said: Error: Function failed. "
            "Exception: ValueError: cannot take the square root of -4.0",
            "Calculator: Stopped after 3 results: [4.0, 4.0, 4.0]",
            "Model calls for that request: 4",
        ],
    )


def test_tool_in_class() -> None:
    """TL-1, LP-4, LP-6: bound methods as run-level tools (one wrapped with
    tool(description=...)), both called in one batch, their results in call order; state
    changed between runs changes the tools; the tool's exception is an error result and
    the other call of the batch still runs."""
    check(
        "tool_in_class",
        [
            "Home: target set to 21.5 °C; target is 21.5 °C",
            "Home (locked): Error: Function failed.; target is 18.0 °C",
            "Target after both runs: 18.0",
        ],
    )


def test_dynamic_tool_exposure() -> None:
    """LP-4, SC-5, LP-33: a tool adds tools through its injected context; the next model
    call is offered them."""
    check(
        "dynamic_tool_exposure",
        [
            "(offered: ['load_geometry'])",
            "(offered: ['circle_area', 'load_geometry', 'sphere_volume'])",
            "(offered: ['circle_area', 'load_geometry', 'sphere_volume'])",
            "Geometer: The area is 12.57.",
        ],
    )


def test_function_tool_with_explicit_schema() -> None:
    """TL-1, LP-4, TL-14: tools whose schema is given (a pydantic model, a JSON schema
    dict), called in one batch."""
    check(
        "function_tool_with_explicit_schema",
        ["CheckIn: Done: 14C reserved on KL1234, 1 bag(s) added."],
    )


def test_function_tool_from_dict_with_dependency_injection() -> None:
    """TL-2, LP-4, TL-16: a tool restored from its dict form with its function injected
    is called by the loop."""
    check(
        "function_tool_from_dict_with_dependency_injection",
        ["Arithmetic: 6 times 7 is 42."],
    )


def test_function_tool_declaration_only() -> None:
    """TL-6, LP-11: the call to a tool without a function comes back in
    result.user_input_requests; the caller answers with a function_result and the model
    continues from it."""
    check(
        "function_tool_declaration_only",
        [
            'Pending call: read_sensor({"sensor": "soil_moisture"}) id=call_sensor_1',
            "Greenhouse: The soil moisture is 38%.",
        ],
    )


def test_function_tool_with_max_invocations() -> None:
    """TL-8, LP-6, SE-7: @tool(max_invocations=2): the third call gets an error result
    without running; the counters count the two that ran; the session's history holds
    every call and result."""
    check(
        "function_tool_with_max_invocations",
        [
            "SampleDesk: Result: a sample of tea is on its way",
            "SampleDesk: Result: a sample of coffee is on its way",
            "SampleDesk: Result: Error: Function failed.",
            "Calls that ran: 2, calls that raised: 0",
            "The session's history:",
            "  user: Send me a sample of tea.",
            '  assistant: call free_sample {"product": "tea"}',
            "  tool: result a sample of tea is on its way",
            "  assistant: Result: a sample of tea is on its way",
            "  user: Send me a sample of coffee.",
            '  assistant: call free_sample {"product": "coffee"}',
            "  tool: result a sample of coffee is on its way",
            "  assistant: Result: a sample of coffee is on its way",
            "  user: Send me a sample of cocoa.",
            '  assistant: call free_sample {"product": "cocoa"}',
            "  tool: result Error: Function failed.",
            "  assistant: Result: Error: Function failed.",
        ],
    )


def test_function_tool_with_approval() -> None:
    """LP-13, LP-14: only the call that needs approval waits; sending back the exchange
    with the user's answer runs the other call of the batch and the approved one, or
    gives the rejected one its error result; without streaming (rejected) and streaming
    (approved, AgentResponse.from_updates)."""
    prompt = 'Allow delete_file({"name": "old_backup.zip"})? [y/n] '
    listing = "notes.txt, draft.docx, old_backup.zip"
    check(
        "function_tool_with_approval",
        [
            "--- not streaming",
            f"{prompt}n",
            f"Cleaner: Results: {listing}; Error: Tool call invocation was rejected by user.",
            "Files left: ['draft.docx', 'notes.txt', 'old_backup.zip']",
            "--- streaming",
            f"{prompt}y",
            f"Cleaner: Results: {listing}; old_backup.zip deleted",
            "Files left: ['draft.docx', 'notes.txt']",
        ],
        stdin="n\ny\n",
    )


def test_tools_approval_streaming_session() -> None:
    """EX-3, LP-13, LP-14, SE-1: the most common agent in one program: a tool call,
    then an approval answered with only the decision (the session holds the rest),
    every turn streamed, and a follow-up answered from the session's history."""
    check(
        "tools_approval_streaming_session",
        [
            "Travel: ",
            'Approve book_flight({"flight": "SK 4035 at 09:10"})? yes',
            "Travel: Done: booked SK 4035 at 09:10.",
            "Booked: ['SK 4035 at 09:10']",
            "Travel: It was SK 4035 at 09:10.",
        ],
    )


def test_function_tool_with_approval_and_threads() -> None:
    """TH-4, LP-14: with a thread only the decision is sent back; the approved call
    runs, the rejected one never does; the thread keeps the request, the decision and
    the result."""
    kept = (
        "The thread holds: [('user', ['text']), ('assistant', ['function_call', 'function_approval_request']), "
        "('user', ['function_approval_response']), ('tool', ['function_result']), ('assistant', ['text'])]"
    )
    check(
        "function_tool_with_approval_and_threads",
        [
            "User: Invoice Acme Ltd for 250 EUR.",
            'Approval asked for send_invoice {"customer": "Acme Ltd", "amount_eur": 250.0}',
            "Decision: approve",
            "Billing: Done: invoice of 250.00 EUR sent to Acme Ltd.",
            kept,
            "User: Invoice Globex for 990 EUR.",
            'Approval asked for send_invoice {"customer": "Globex", "amount_eur": 990.0}',
            "Decision: reject",
            "Billing: Understood, nothing was sent.",
            kept,
            "Invoices actually sent: ['Acme Ltd']",
        ],
    )


# --- agents as tools, custom agents, context providers, sessions and threads ------------------


def test_agent_as_tool() -> None:
    """AG-8, MW-2: as_tool(name, description, arg_name, arg_description) is called by
    the coordinator through its function middleware; the sub-agent is sent the argument
    and its text is the result."""
    poem = "Morning tea steams / small clouds over the saucer / the day can wait now"
    check(
        "agent_as_tool",
        [
            "[to haiku_writer] {'topic': 'tea'}",
            f"[from haiku_writer] {poem!r}",
            "Editor: Here is your haiku:",
            poem,
        ],
    )


def test_custom_agent() -> None:
    """AG-1, AG-8, TY-7: a BaseAgent subclass whose run returns a coroutine or an async
    generator, normalize_messages for its input, history kept under
    InMemoryHistoryProvider.DEFAULT_SOURCE_ID of the session; as_tool works on it."""
    check(
        "custom_agent",
        [
            "Reverser: Reverses the order of words.",
            "Reverser: three two one",
            "Reverser (streamed): blue| green| red|",
            "Session history: ['first run here', 'here run first', 'second run here', 'here run second']",
            "Host: Reversed: are desserts stressed",
        ],
    )


def test_simple_context_provider() -> None:
    """SE-10, TH-1: a thread-era provider asks the client for structured output in
    invoked (options={"response_format": Model}, response.value) and adds instructions
    in invoking."""
    check(
        "simple_context_provider",
        [
            "User: Can you help me pack?",
            "Agent: Noted. I still need your destination and month.",
            "User: I'm flying to Lisbon.",
            "Agent: Noted. I still need your destination and month.",
            "User: I leave in April.",
            "Agent: Noted. I still need your month.",
            "User: So what should I pack?",
            "Agent: Pack light: Lisbon in April is mild.",
            "Trip plan: destination='Lisbon' month='April'",
        ],
    )


def test_simple_context_provider_session() -> None:
    """SE-2, SE-3, SE-4: a provider keeps a registered pydantic model in its session
    state (register_state_type), extracts it with structured output in after_run, adds
    instructions in before_run; the state survives to_dict() / JSON / from_dict() as
    that model."""
    check(
        "simple_context_provider_session",
        [
            "User: Hello!",
            "Agent: Still needed: name, club.",
            "User: I'm Noor.",
            "Agent: Still needed: name, club.",
            "User: I'd like to join the chess club.",
            "Agent: Still needed: club.",
            "User: Am I all set?",
            "Agent: Registered: Noor, chess club.",
            "Restored from JSON: Member(name='Noor', club='chess club')",
        ],
    )


def test_suspend_resume_thread() -> None:
    """TH-2, TH-6, TH-1, LP-19: `await thread.serialize()` / `await
    agent.deserialize_thread(...)` through JSON: a local thread sends its history again,
    a service thread only its conversation id and the new message."""
    check(
        "suspend_resume_thread",
        [
            "--- history kept in the thread",
            "Packer: Added.",
            "Stored: 2 messages, service id None",
            "Packer: Your list: passport, charger.",
            "--- history kept by the service",
            "Packer: Added.",
            "Stored: 0 messages, service id conv-pack-7",
            "Packer: (sent 1 new message) Your list: passport, charger.",
        ],
    )


def test_suspend_resume_session() -> None:
    """SE-2, SE-8: session.to_dict() through JSON and AgentSession.from_dict() in a new
    agent: the local history, or the service's conversation id, carries the conversation
    on."""
    check(
        "suspend_resume_session",
        [
            "--- history in the session",
            "Support: Thanks, noted.",
            "Saved session: ['session_id', 'state', 'type', 'version']",
            "Same session id: True",
            "Support: You told me: My order number is 4471.",
            "--- history kept by the service",
            "Support: Thanks, noted.",
            "Saved session: ['service_session_id', 'session_id', 'state', 'type', 'version']",
            "Same session id: True",
            "Support: You told me: my order number is 4471.",
        ],
    )


def test_chat_client_with_session() -> None:
    """SE-1, SE-8, TH-1, LP-19: no session forgets; an in-memory session sends its
    history, tool calls included; AgentSession(service_session_id=...) continues a
    service's conversation in a new agent, sending only the new message."""
    check(
        "chat_client_with_session",
        [
            "--- no session",
            "Guide: Rijksmuseum is open 09:00-17:00.",
            "Guide: You haven't asked about any museum yet.",
            "--- one session, kept in memory",
            "Guide: Louvre is open 09:00-18:00.",
            "Guide: Rijksmuseum is open 09:00-17:00.",
            "Guide: You asked about: Louvre, Rijksmuseum.",
            "--- a session the service keeps",
            "Guide: The Prado is in Madrid.",
            "Service conversation id: conv-museum-1",
            "Guide: (1 new message received) You asked about the Prado.",
        ],
    )


def test_custom_history_provider() -> None:
    """SE-6, SE-8, SE-4: a HistoryProvider subclass (get_messages / save_messages)
    stores the run's input and response itself, so the session's state stays empty, and
    a session restored from to_dict() finds its history through it."""
    check(
        "custom_history_provider",
        [
            "Concierge: Welcome! Noted.",
            "The saved session holds state: {}",
            "The history file holds 2 messages",
            "Concierge: Earlier you said: I am in room 512.",
        ],
    )


def test_every_example_is_tested_and_listed() -> None:
    """EX-1: every program in examples/ has a test here and a row in examples/README.md
    naming its upstream sample, and none is a copy of an upstream file (no copyright
    header, no port note, no upstream import)."""
    names = {path.stem for path in EXAMPLES.glob("*.py")}
    source = Path(__file__).read_text(encoding="utf-8")
    tested = set(re.findall(r'(?:check|run_example)\(\s*"(\w+)"', source))
    assert names <= tested, f"examples without a test: {sorted(names - tested)}"
    readme = (EXAMPLES / "README.md").read_text(encoding="utf-8")
    missing = sorted(name for name in names if f"`{name}.py`" not in readme)
    assert not missing, f"examples missing from examples/README.md: {missing}"
    rows = [
        line
        for line in readme.splitlines()
        if line.startswith("| `") and ".py` |" in line
    ]
    assert len(rows) == len(names)
    for row in rows:
        assert re.search(r"\| `\d\d-[\w/-]+\.py` \|$", row), (
            f"no upstream sample path: {row}"
        )
    for path in EXAMPLES.glob("*.py"):
        text = path.read_text(encoding="utf-8")
        assert "Copyright" not in text, path.name
        assert "Ported from" not in text, path.name
        assert "agent_framework" not in text, path.name
    assert len(names) >= 30


async def test_tool_context_is_the_middleware_context(stream: bool) -> None:
    """EX-2, TL-4: the tool's injected context is the object the function middleware
    received, so what the middleware put in kwargs and metadata before call_next is what
    the tool reads; both modes."""
    seen: list[FunctionInvocationContext] = []

    @function_middleware
    async def authenticate(context, call_next):
        seen.append(context)
        context.kwargs["user"] = {"tok-1": "ada"}[context.kwargs["token"]]
        context.metadata["checked_by"] = "authenticate"
        await call_next()

    @tool
    def whoami(ctx: FunctionInvocationContext) -> str:
        """Who is calling."""
        return f"{ctx.kwargs['user']} {ctx.metadata['checked_by']} {ctx is seen[-1]}"

    def model(messages: Any, options: Any) -> Any:
        last = messages[-1]
        return (
            str(last.contents[0].result)
            if last.role == "tool"
            else [call("whoami", {})]
        )

    agent = Agent(
        ScriptedChatClient([model] * 2), tools=[whoami], middleware=[authenticate]
    )
    kwargs = {"function_invocation_kwargs": {"token": "tok-1"}}
    if stream:
        response = await agent.run(
            "who am I?", stream=True, **kwargs
        ).get_final_response()
    else:
        response = await agent.run("who am I?", **kwargs)
    assert response.text == "ada authenticate True"
    assert len(seen) == 1
