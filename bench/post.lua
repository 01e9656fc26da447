-- wrk script: POST the JSON body in $BODY to the URL given to wrk.
wrk.method = "POST"
wrk.headers["content-type"] = "application/json"
wrk.headers["anthropic-version"] = "2023-06-01"
wrk.body = os.getenv("BODY")
-- $KEY, when set: the client key the gateway's `keys:` asks for.
local key = os.getenv("KEY")
if key and key ~= "" then
  wrk.headers["authorization"] = "Bearer " .. key
end
-- $HEADERS, when set: more headers, `name: value` pairs separated by `;` (a peer
-- gateway's routing headers).
local extra = os.getenv("HEADERS")
if extra and extra ~= "" then
  for pair in string.gmatch(extra, "[^;]+") do
    local name, value = string.match(pair, "^%s*([^:]+):%s*(.-)%s*$")
    if name then
      wrk.headers[name] = value
    end
  end
end
