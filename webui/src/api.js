// The JSON API. Errors carry the API's message and, when one input is to
// blame, its field name, so forms can show the error beside that field.

export class ApiError extends Error {
  constructor(status, body) {
    super(body?.error ?? `request failed (${status})`);
    this.status = status;
    this.field = body?.field ?? null;
  }
}

let onUnauthorized = () => {};
export function whenUnauthorized(handler) {
  onUnauthorized = handler;
}

export async function api(method, path, body) {
  const res = await fetch("/api/v1/" + path, {
    method,
    headers: body === undefined ? {} : { "Content-Type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
    credentials: "same-origin",
  });
  const data = res.status === 204 ? null : await res.json().catch(() => null);
  if (res.status === 401 && path !== "login" && path !== "session") onUnauthorized();
  if (!res.ok) throw new ApiError(res.status, data);
  return data;
}

export const get = (path) => api("GET", path);
export const post = (path, body = {}) => api("POST", path, body);
export const put = (path, body) => api("PUT", path, body);
export const del = (path) => api("DELETE", path);
