// The server's bearer token (spec/hosting.md HS-230). The page's files are served
// without it; every API request carries it once known. When an API answers 401 the
// page asks for it in the token form (a labelled password field), keeps it in
// sessionStorage (gone with the tab; never localStorage) and sends the request again.
// The token never goes into a URL, the page's text or an error message.

const KEY = "minagent-ui:token";
let asking = null;
// the token when sessionStorage cannot be used: it lives as long as this page
function stored() {
  try {
    return sessionStorage.getItem(KEY);
  } catch {
    return null;
  }
}

// The request's headers with the token added (a Headers object: the caller's own kept).
export function withToken(headers, token) {
  const out = new Headers(headers || {});
  if (token) out.set("authorization", `Bearer ${token}`);
  return out;
}

// Show the token form and wait for its answer; one form for every request waiting.
function askForToken(refused) {
  if (asking) return asking;
  const form = document.getElementById("token-form");
  const input = document.getElementById("token");
  const note = document.getElementById("token-note");
  note.textContent = refused
    ? "The server refused the token. Enter the server's token."
    : "This server needs a token. Enter the token it was started with.";
  form.hidden = false;
  input.value = "";
  input.focus();
  asking = new Promise((resolve) => {
    form.addEventListener(
      "submit",
      (event) => {
        event.preventDefault();
        const token = input.value.trim();
        input.value = "";
        form.hidden = true;
        asking = null;
        try {
          sessionStorage.setItem(KEY, token);
        } catch {
          memory = token;
        }
        resolve(token);
      },
      { once: true },
    );
  });
  return asking;
}

let memory = null;

// fetch with the token: on a 401 the token is asked for (again) and the request sent
// again with it, until the server takes it or the request is aborted.
export async function authFetch(url, init = {}) {
  for (;;) {
    const token = stored() || memory;
    const response = await fetch(url, { ...init, headers: withToken(init.headers, token) });
    if (response.status !== 401) return response;
    if (response.body) await response.body.cancel();
    if (init.signal && init.signal.aborted) return response;
    try {
      sessionStorage.removeItem(KEY);
    } catch {
      // nothing kept there
    }
    memory = null;
    await untilAborted(askForToken(token !== null), init.signal);
  }
}

// The promise, or an AbortError as soon as the signal aborts (Stop while the token is
// asked for ends the run there).
function untilAborted(promise, signal) {
  if (!signal) return promise;
  return Promise.race([
    promise,
    new Promise((_, reject) => {
      const abort = () => reject(new DOMException("the request was aborted", "AbortError"));
      if (signal.aborted) abort();
      else signal.addEventListener("abort", abort, { once: true });
    }),
  ]);
}
