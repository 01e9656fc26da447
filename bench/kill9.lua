-- wrk script for bench/kill9.sh: every request asks mock/echo to echo a unique id; each
-- thread appends the ids answered 200 to $ANSWERED.<tag>, one per line.
local counter, seen, tag, out = 0, 0, nil, nil

function setup(thread)
  thread:set("tag", tostring(math.random(1, 1000000000)))
end

function init(args)
  tag = wrk.thread:get("tag")
  out = io.open(os.getenv("ANSWERED") .. "." .. tag, "w")
end

function request()
  counter = counter + 1
  local body = '{"model":"mock/echo","messages":[{"role":"user","content":"kill9-'
    .. tag .. '-' .. counter .. '"}]}'
  return wrk.format("POST", "/v1/chat/completions", {["content-type"] = "application/json"}, body)
end

function response(status, headers, body)
  if status == 200 then
    local id = string.match(body, "kill9%-%d+%-%d+")
    if id then
      out:write(id, "\n")
      seen = seen + 1
      if seen % 256 == 0 then out:flush() end
    end
  end
end
