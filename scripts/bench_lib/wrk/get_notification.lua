-- GET /v1/push/notifications/{id} of one notification with two deliveries.
local key, id = os.getenv("BENCH_KEY"), os.getenv("BENCH_NOTIFICATION")
wrk.method = "GET"
wrk.path = "/v1/push/notifications/" .. id
wrk.headers["Authorization"] = "Bearer " .. key
if os.getenv("BENCH_DELAY_MS") then
  local ms = tonumber(os.getenv("BENCH_DELAY_MS"))
  delay = function() return ms end
end
