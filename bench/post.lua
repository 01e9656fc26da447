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
