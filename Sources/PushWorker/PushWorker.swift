// PushWorker module.
