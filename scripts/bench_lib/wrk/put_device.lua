-- PUT /v1/push/devices with a new token (and user) on every request, as new installs register.
-- Environment: BENCH_KEY, BENCH_APP; BENCH_DELAY_MS paces each connection (the half-rate run).
local key, app = os.getenv("BENCH_KEY"), os.getenv("BENCH_APP")
local counter, prefix = 0, "0"
function setup(thread) thread:set("prefix", tostring(math.random(1, 2000000000))) end
function init(args) prefix = wrk.thread:get("prefix") or tostring(math.random(1, 2000000000)) end
request = function()
  counter = counter + 1
  local token = "wrk" .. prefix .. "n" .. counter
  local body = '{"app_id":"' .. app .. '","token":"' .. token .. '","platform":"android","user_id":"' .. token .. '"}'
  return wrk.format("PUT", "/v1/push/devices",
                    {["Authorization"] = "Bearer " .. key, ["Content-Type"] = "application/json"}, body)
end
if os.getenv("BENCH_DELAY_MS") then
  local ms = tonumber(os.getenv("BENCH_DELAY_MS"))
  delay = function() return ms end
end
