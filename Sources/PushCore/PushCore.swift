// PushCore module.
