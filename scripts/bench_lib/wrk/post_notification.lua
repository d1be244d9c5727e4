-- POST /v1/push/notifications to one user with two devices (no Idempotency-Key: each is new).
local key, app = os.getenv("BENCH_KEY"), os.getenv("BENCH_APP")
wrk.method = "POST"
wrk.path = "/v1/push/notifications"
wrk.headers["Authorization"] = "Bearer " .. key
wrk.headers["Content-Type"] = "application/json"
wrk.body = '{"app_id":"' .. app .. '","user_ids":["bench_user"],"title":"Your order shipped","body":"Order 42 is on its way","data":{"order":"42"},"badge":1}'
if os.getenv("BENCH_DELAY_MS") then
  local ms = tonumber(os.getenv("BENCH_DELAY_MS"))
  delay = function() return ms end
end
