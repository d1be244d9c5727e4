// PushStore module.
