"""Prints and checks the outcome of scripts/demo-live (live mode against the local fakes).

Usage: demo_live_report.py WORKDIR

WORKDIR holds what scripts/demo-live gathered: labels.tsv (device id, label, platform, expected
status), notification.json (`pushfleet notifications show --json`), devices.json (`devices list
--json`), credentials.json (`apps credentials show --json`), secrets.json (the notification's
title, body and data values, which must not appear in clear in an encrypted payload) and the fakes'
logs apns.jsonl, fcm.jsonl, webpush.jsonl. Exits 1, saying why, when an outcome differs from what the
demo expects (a demo that prints a wrong result as if it were right helps nobody).
"""
import base64
import json
import os
import sys

problems = []


def check(ok, what):
    if not ok:
        problems.append(what)
    return ok


def load(name):
    with open(os.path.join(work, name), encoding="utf-8") as f:
        return json.load(f)


def jsonl(name):
    path = os.path.join(work, name)
    if not os.path.exists(path):
        return []
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def b64u_decode(text):
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def in_clear(text, secrets):
    """The secrets (title, body, data values) found in `text`."""
    return [s for s in secrets if s and s in text]


def deliveries_table(labels, report, devices):
    print("{:<34} {:<8} {:<14} {:<9} {:<9} {:<52} {}".format(
        "device", "platform", "status", "encrypted", "provider", "provider message id", "error code"))
    by_id = {d["device_id"]: d for d in report["deliveries"]}
    active = {d["id"]: d for d in devices}
    for device_id, label, platform, expected in labels:
        d = by_id.get(device_id)
        if not check(d is not None, "no delivery for " + label):
            continue
        print("{:<34} {:<8} {:<14} {:<9} {:<9} {:<52} {}".format(
            label, platform, d["status"], str(d["encrypted"]).lower(), d.get("provider") or "-",
            d.get("provider_message_id") or "-", d.get("error_code") or "-"))
        got = d["status"] if d["status"] != "failed" else d.get("error_code")
        check(got == expected, "{}: expected {}, got {} ({})".format(label, expected, got, d.get("error_detail")))
        if expected == "sent":
            check(bool(d.get("provider_message_id")), label + ": sent without a provider message id")
        dev = active.get(device_id)
        if dev is not None and expected == "UNREGISTERED":
            print("{:<34} {}".format("", "device now " + ("active (registered after the provider's verdict, R-DEV-8)"
                                                       if dev["active"] else
                                                       "inactive ({})".format(dev.get("deactivation_reason")))))
    charges = sum(1 for l in report["ledger"] if l["kind"] == "charge")
    refunds = sum(1 for l in report["ledger"] if l["kind"] == "refund")
    print("notification status={} device_count={}  ledger: {} charge(s), {} refund(s)".format(
        report["status"], report["device_count"], charges, refunds))
    check(charges == len(labels) and refunds == 0, "ledger: every answered delivery is charged (R-SEND-9)")


def credentials(creds):
    for c in creds:
        ids = "  ".join("{}={}".format(k, v) for k, v in sorted(c.get("identifiers", {}).items())
                        if k != "public_key")
        print("{:<8} state={:<10} first_accepted_at={}  {}".format(
            c["kind"], c["state"], c.get("first_accepted_at") or "-", ids))
        check(c["state"] == "verified" and c.get("first_accepted_at"),
              c["kind"] + " set not verified by the first acceptance (R-APP-3)")
    check(sorted(c["kind"] for c in creds) == ["apns", "fcm", "webpush"], "expected apns, fcm and webpush sets")


def apns_log(labels, secrets):
    log = jsonl("apns.jsonl")
    pushes = [e for e in log if e["kind"] == "push"]
    conns = sum(1 for e in log if e["kind"] == "connection")
    print("fake APNs: {} connection(s), {} push(es) accepted (it logs 200s only; the Unregistered answer is not logged)"
          .format(conns, len(pushes)))
    tokens = {token: label for token, label in labels}
    for e in pushes:
        label = tokens.get(e["token"], e["token"][:12])
        payload = json.loads(e["payload"])
        clear = in_clear(e["payload"], secrets)
        if "hk" in payload:
            print("  {}: apns-id {}  payload has hk (envelope v{} kid {}), aps.alert = {}, title/body/data in clear: {}"
                  .format(label, e["apns_id"], payload["hk"].get("v"), payload["hk"].get("kid"),
                          json.dumps(payload["aps"].get("alert"), ensure_ascii=False), "none" if not clear else clear))
            check(not clear, "APNs encrypted payload shows " + ", ".join(clear) + " in clear (R-ENC-7)")
            check(payload["aps"].get("mutable-content") == 1, "APNs encrypted payload without mutable-content (R-ENC-4)")
        else:
            print("  {}: apns-id {}  plaintext payload (no key registered): {}".format(label, e["apns_id"], e["payload"]))
    check(sum(1 for e in pushes if "hk" in json.loads(e["payload"])) == 1, "APNs: one sealed push expected")
    check(len(pushes) == 2, "APNs: two accepted pushes expected")


def fcm_log(labels, secrets):
    log = jsonl("fcm.jsonl")
    pushes = [e for e in log if e["kind"] == "push"]
    oauth = sum(1 for e in log if e["kind"] == "oauth")
    print("fake FCM: {} OAuth token(s) issued, {} message(s) accepted (the UNREGISTERED answer is not logged)"
          .format(oauth, len(pushes)))
    tokens = {token: label for token, label in labels}
    for e in pushes:
        message = json.loads(e["body"])["message"]
        data = message.get("data") or {}
        clear = in_clear(e["body"], secrets)
        print("  {}: name {}  data keys {}, notification block: {}, title/body/data in clear: {}".format(
            tokens.get(e["token"], e["token"][:12]), e["name"], sorted(data), "notification" in message,
            "none" if not clear else clear))
        check("hk" in data and "notification" not in message and not clear,
              "FCM message for a keyed device is not data-only with hk (R-ENC-5, R-ENC-7)")
    check(len(pushes) == 1 and oauth >= 1, "FCM: one accepted message and an OAuth token expected")


def webpush_log(secrets):
    log = jsonl("webpush.jsonl")
    print("fake Web Push: {} request(s)".format(len(log)))
    for e in log:
        vapid = e.get("vapid") or {}
        plain = e.get("plaintext")
        print("  {} -> {} {}  VAPID aud {} sub {}  body {} bytes, decrypted {} bytes{}".format(
            e["path"], e["status"], e["reason"], vapid.get("aud"), vapid.get("sub"), e["body_length"],
            len(plain.encode()) if plain is not None else "-",
            "" if e.get("decrypt_error") is None else " decrypt_error " + e["decrypt_error"]))
        if plain is not None:
            print("     plaintext: " + plain)
            check(e["body_length"] == len(plain.encode()) + 103, "Web Push body is not plaintext + 103 bytes (RFC 8291)")
            check(all(s in plain for s in secrets), "Web Push plaintext misses the notification content (R-ENC-3)")
        check(e.get("decrypt_error") is None, "the fake could not decrypt " + e["path"])
    statuses = sorted(e["status"] for e in log)
    check(statuses == [201, 410], "Web Push: one 201 and one 410 expected, got {}".format(statuses))


def worker_log(token_labels, secrets):
    """R-LOG: the worker's log (level debug) names no full device token, subscription endpoint,
    credential or notification content."""
    with open(os.path.join(work, "worker.log"), encoding="utf-8") as f:
        text = f.read()
    subs = load("subscriptions.json")["subscriptions"]
    forbidden = {"token " + label: token for token, label in token_labels}
    forbidden.update({"endpoint " + s["path"]: s["path"] for s in subs})
    forbidden.update({"p256dh " + s["path"]: s["p256dh"] for s in subs})
    forbidden.update({"auth " + s["path"]: s["auth"] for s in subs})
    forbidden.update({"content " + s: s for s in secrets})
    forbidden["credentials key"] = os.environ.get("PUSHFLEET_CREDENTIALS_KEY", "")
    found = sorted(name for name, value in forbidden.items() if value and value in text)
    events = sorted({json.loads(line).get("event", "?") for line in text.splitlines() if line.startswith("{")})
    print("worker log: {} line(s), events {}; full tokens, endpoints, keys or content found: {}".format(
        len(text.splitlines()), ", ".join(events), ", ".join(found) or "none"))
    check(not found, "the worker log shows " + ", ".join(found))


def since(name):
    """The fake's log lines written after step 10 began (its line count then is in NAME.offset)."""
    with open(os.path.join(work, name + ".offset"), encoding="utf-8") as f:
        offset = int(f.read().strip() or 0)
    return jsonl(name + ".jsonl")[offset:]


def kinds(token_labels, secrets):
    """Step 10 (R-KIND-1..3): the localized alert and the background push as the fakes saw them."""
    tokens = {token: label for token, label in token_labels}
    loc_secrets = secrets + ["MSG_FROM", "MSG_CODE", "731904"]
    for name, expected in (("loc.json", "sent"), ("background.json", "sent")):
        report = load(name)
        print("{}: status {}, device_count {}".format(name.split(".")[0], report["status"], report["device_count"]))
        check(report["status"] == expected, name + ": notification not sent")
    pushes = [e for e in since("apns") if e["kind"] == "push"]
    background = [e for e in pushes if e.get("push_type") == "background"]
    alerts = [e for e in pushes if e.get("push_type") == "alert"]
    print("fake APNs: {} alert(s), {} background push(es)".format(len(alerts), len(background)))
    for e in alerts:
        payload = json.loads(e["payload"])
        aps = payload["aps"]
        label = tokens.get(e["token"], e["token"][:12])
        shown = {k: v for k, v in aps.items() if k != "alert"}
        print("  alert {}: aps.alert = {}, in clear beside it: {}".format(
            label, json.dumps(aps.get("alert"), ensure_ascii=False), json.dumps(shown, ensure_ascii=False)))
        for key, value in (("interruption-level", "time-sensitive"), ("relevance-score", 0.8), ("category", "SIGN_IN"),
                           ("target-content-id", "sign-in")):
            check(aps.get(key) == value, "{}: aps.{} is not {} (R-KIND-2)".format(label, key, value))
        if "hk" in payload:
            check(aps.get("alert") == {"title-loc-key": "PUSH_NEW_TITLE", "loc-key": "PUSH_NEW_BODY"},
                  label + ": the encrypted alert does not carry the placeholder's loc keys (R-KIND-3)")
            clear = in_clear(e["payload"], loc_secrets)
            check(not clear, label + ": " + ", ".join(clear) + " in clear (R-ENC-7, R-KIND-3)")
        else:
            check(aps.get("alert", {}).get("title-loc-key") == "MSG_FROM", label + ": plaintext alert without its loc key")
    for e in background:
        payload = json.loads(e["payload"])
        label = tokens.get(e["token"], e["token"][:12])
        print("  background {}: apns-push-type {}, apns-priority {}, aps {}, {}".format(
            label, e["push_type"], e["priority"], json.dumps(payload["aps"]),
            "hk (data sealed)" if "hk" in payload else "data " + json.dumps(payload.get("data"))))
        check(e["priority"] == "5" and payload["aps"] == {"content-available": 1},
              label + ": background push not at priority 5 with aps {content-available: 1} (R-KIND-1)")
        if "hk" in payload:
            check(not in_clear(e["payload"], secrets), label + ": the background data is in clear")
    check(len(alerts) == 2 and len(background) == 2, "APNs: two alerts and two background pushes expected")
    check(sum(1 for e in pushes if "hk" in json.loads(e["payload"])) == 2, "APNs: one sealed push of each kind expected")
    messages = [json.loads(e["body"])["message"] for e in since("fcm") if e["kind"] == "push"]
    print("fake FCM: {} message(s), each data-only: {}".format(len(messages), all("notification" not in m for m in messages)))
    check(len(messages) == 2 and all(set(m.get("data", {})) == {"hk"} for m in messages),
          "FCM: two data-only hk messages expected (R-ENC-5)")
    web = [e for e in since("webpush") if e.get("status") == 201]
    for e in web:
        print("  web push urgency {}: {}".format(e.get("urgency"), e.get("plaintext")))
    check(sorted(e.get("urgency") for e in web) == ["high", "low"], "Web Push: the background push is not Urgency: low")


def main():
    labels = []
    with open(os.path.join(work, "labels.tsv"), encoding="utf-8") as f:
        for line in f:
            if line.strip():
                labels.append(line.rstrip("\n").split("\t"))
    token_labels = []
    with open(os.path.join(work, "tokens.tsv"), encoding="utf-8") as f:
        for line in f:
            if line.strip():
                token_labels.append(line.rstrip("\n").split("\t"))
    secrets = load("secrets.json")
    section = os.environ.get("DEMO_LIVE_SECTION", "all")
    if section in ("all", "deliveries"):
        deliveries_table(labels, load("notification.json"), load("devices.json"))
    if section in ("all", "credentials"):
        credentials(load("credentials.json"))
    if section in ("all", "fakes"):
        apns_log(token_labels, secrets)
        fcm_log(token_labels, secrets)
        webpush_log(secrets)
        worker_log(token_labels, secrets)
    if section == "kinds":
        kinds(token_labels, secrets)
        worker_log(token_labels, secrets + ["MSG_FROM", "MSG_CODE", "731904"])
    if problems:
        print("\ndemo-live: UNEXPECTED:\n  " + "\n  ".join(problems))
        sys.exit(1)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    work = sys.argv[1]
    main()
