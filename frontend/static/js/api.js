// The one way the pages call the tenant's API: same-origin credentials, the CSRF token
// from the page's form, JSON both ways, and an error response turned into an Error whose
// message a person can read. Each page keeps its own wording of that message (see the
// two `message` functions below).

export function csrf() {
  return document.querySelector('input[name=csrfmiddlewaretoken]')?.value ?? '';
}

// An API error: the message shown, with the status and the parsed body kept alongside.
export class ApiError extends Error {
  constructor(message, status, body) {
    super(message);
    this.name = 'ApiError';
    this.status = status;
    this.body = body;
  }
}

// The person-readable `detail` the API carries: a string, or a list of validation errors
// joined ("HTTP 502" when there is none). The uploads page shows these.
export function readableMessage(status, body) {
  const detail = typeof body.detail === 'string' ? body.detail
    : (body.detail ?? []).map((d) => d.msg ?? JSON.stringify(d)).join('; ');
  return detail || `HTTP ${status}`;
}

// "404: Not found": the status, then the detail (or the whole body) as sent. The explorer
// shows these.
export function statusMessage(status, body) {
  const detail = typeof body.detail === 'string' ? body.detail : JSON.stringify(body.detail ?? body);
  return `${status}: ${detail}`;
}

// A function that calls `base + path` and resolves to the parsed JSON body, or rejects
// with an ApiError worded by `message(status, body)`. `options` are fetch's; the headers
// given are added to Accept and X-CSRFToken.
export function apiClient(base, message = readableMessage) {
  return async function api(path, options = {}) {
    const response = await fetch(`${base}${path}`, {
      credentials: 'same-origin',
      ...options,
      headers: { Accept: 'application/json', 'X-CSRFToken': csrf(), ...(options.headers || {}) },
    });
    const body = await response.json().catch(() => ({}));
    if (!response.ok) throw new ApiError(message(response.status, body ?? {}), response.status, body);
    return body;
  };
}
