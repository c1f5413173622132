// Loaded into the conformance suite's Node process (NODE_OPTIONS=--import): the suite has no
// option for credentials, and `lantern mcp --http` answers nobody without a token, so every
// request the suite makes (fetch and undici alike share the global dispatcher) carries the
// bearer token of $LANTERN_CONFORMANCE_TOKEN.
import { Agent, setGlobalDispatcher } from "undici";

const token = process.env.LANTERN_CONFORMANCE_TOKEN;
if (!token) throw new Error("LANTERN_CONFORMANCE_TOKEN is not set");
const authorization = `Bearer ${token}`;

function withToken(headers) {
  if (headers == null) return { authorization };
  if (Array.isArray(headers)) return [...headers, "authorization", authorization];
  if (typeof headers[Symbol.iterator] === "function") {
    return [...[...headers].flat(), "authorization", authorization];
  }
  return { ...headers, authorization };
}

setGlobalDispatcher(
  new Agent().compose((dispatch) => (options, handler) =>
    dispatch({ ...options, headers: withToken(options.headers) }, handler),
  ),
);
