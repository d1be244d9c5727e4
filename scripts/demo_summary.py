"""Prints one notification's summary for scripts/demo from `pushfleet notifications show --json`."""
import json
import sys

r = json.load(sys.stdin)
print("notification {}  status={:<12} encrypted={:<5} device_count={}  error_code={}".format(
    r["id"], r["status"], str(r.get("encrypted")), r["device_count"], r.get("error_code") or "-"))
if r.get("send_at"):
    print("   send_at {}  started {}".format(r["send_at"], r.get("started_at") or "-"))
for d in r["deliveries"]:
    print("   delivery {}  {:<7} encrypted={:<5} attempts={}  error_code={}".format(
        d["device_id"][:8], d["status"], str(d["encrypted"]), d["attempts"], d.get("error_code") or "-"))
charges = sum(1 for l in r["ledger"] if l["kind"] == "charge")
refunds = sum(1 for l in r["ledger"] if l["kind"] == "refund")
sms_rows = sum(1 for l in r["ledger"] if l["kind"] == "sms")
print("   ledger: {} charge(s), {} refund(s){}".format(charges, refunds, ", {} sms".format(sms_rows) if sms_rows else ""))
s = r.get("sms")
if s:
    print("   sms {:<7} provider={} id={} error_code={} provider_error_code={} attempts={} segments={} {}".format(
        s["status"], s.get("provider") or "-", s.get("provider_message_id") or "-", s.get("error_code") or "-",
        s.get("provider_error_code") or "-", s["attempts"], s.get("segments") or "-", s.get("encoding") or ""))
    if s.get("request"):
        print("       the request it would have sent (test mode, never sent): {}".format(s["request"]))
