"""The prompt files, shipped in the wheel as the package `elefant_prompts` (setup.py); read by bot/llm/prompts.py."""
