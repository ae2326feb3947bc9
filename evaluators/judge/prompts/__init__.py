"""Our judge prompts, one module per task; `Prompt.version` hashes each one."""
