print("pushfleet")
