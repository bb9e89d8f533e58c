"""Durable minagent runs on DBOS (spec/dbos.md): a run is a DBOS workflow, each model
call and each tool call a step, so a run survives a crash, waits for approvals across
processes and is spread over worker processes by a DBOS queue on PostgreSQL.

    from dbos import DBOS
    from minagent_dbos import DurableAgent

    DBOS(config={"name": "my-app", "system_database_url": "sqlite:///my-app.sqlite"})
    durable = DurableAgent(agent, name="assistant")
    DBOS.launch()  # recovers the runs an earlier process left unfinished
    response = await durable.run("Hello", workflow_id="order-42")
"""

from . import _sqlite  # noqa: F401  (DU-17: before DBOS opens a SQLite database)
from ._durable import (
    APPROVAL_TOPIC,
    APPROVALS_EVENT,
    DurableAgent,
    approve,
    cancel,
    enqueue,
    pending_approvals,
    recover,
    result,
    workflow_name,
)
from ._steps import MODEL_STEP, TOOL_STEP, idempotency_key, recorded
from ._version import definition_version

__all__ = [
    "APPROVALS_EVENT",
    "APPROVAL_TOPIC",
    "MODEL_STEP",
    "TOOL_STEP",
    "DurableAgent",
    "approve",
    "cancel",
    "definition_version",
    "enqueue",
    "idempotency_key",
    "pending_approvals",
    "recorded",
    "recover",
    "result",
    "workflow_name",
]
