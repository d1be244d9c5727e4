// PushProviders module.
