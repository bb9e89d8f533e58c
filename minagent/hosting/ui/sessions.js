// The sessions list (spec/hosting.md HS-227, HS-228): the agent's threads as the store
// lists them (GET /ui/api/threads/{agent}); when the store cannot list, the threads
// this browser opened, kept in localStorage. The pure part (`threadList`,
// `rememberLocal`) has no DOM so that node's test runner can check it.

const LOCAL_MAX = 50;

// The threads this browser opened with an agent, newest first.
export function localThreads(storage, agent) {
  try {
    const list = JSON.parse(storage.getItem(`minagent-ui:threads:${agent}`) || "[]");
    return Array.isArray(list) ? list : [];
  } catch {
    return [];
  }
}

// HS-227: a thread just sent to goes first, keeping the title it had.
export function rememberLocal(storage, agent, id, title) {
  const list = localThreads(storage, agent);
  const old = list.find((t) => t.id === id);
  const rest = list.filter((t) => t.id !== id);
  rest.unshift({ id, title: old ? old.title : title.slice(0, 80) });
  storage.setItem(`minagent-ui:threads:${agent}`, JSON.stringify(rest.slice(0, LOCAL_MAX)));
}

// HS-227: the threads listed, the store's threads when it listed them (`answer` is the
// endpoint's body), else the browser's own; `sent` (a thread this page just sent to,
// `{id, title}`, or null) is listed first when the store does not list it yet.
export function threadList(answer, local, sent) {
  if (!answer || !answer.listed) return local;
  const listed = (answer.threads || []).map((t) => ({ id: t.threadId, title: t.title }));
  if (sent && !listed.some((t) => t.id === sent.id)) listed.unshift(sent);
  return listed;
}

// The list's items: one button per thread, the open one marked aria-current.
export function threadItems(el, threads, current, open) {
  return threads.map((thread) =>
    el(
      "li",
      {},
      el("button", {
        type: "button",
        "data-key": `thread:${thread.id}`,
        "data-thread": thread.id,
        "aria-current": String(thread.id === current),
        text: thread.title || thread.id,
        onclick: () => open(thread.id),
      }),
    ),
  );
}
