-- PUT /v1/push/devices with a new token (and user) on every request, as new installs register.
-- Environment: BENCH_KEY, BENCH_APP; BENCH_RUN names the run (tokens are "wrk<run>t<thread>n<i>",
-- so no run re-registers another run's tokens: Lua's math.random is unseeded and would repeat
-- them); BENCH_DELAY_MS paces each connection (the half-rate run).
local key, app = os.getenv("BENCH_KEY"), os.getenv("BENCH_APP")
local run = os.getenv("BENCH_RUN") or tostring(os.time())
local threads, counter, prefix = 0, 0, "0"
function setup(thread)
  threads = threads + 1
  thread:set("prefix", run .. "t" .. threads)
end
function init(args) prefix = wrk.thread:get("prefix") end
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
