"""Which packages the wheel holds; everything else about the project is in pyproject.toml.

bot/ and db/ are found as they grow. prompts/ stays at the repository's top level (where the prompt files are
specified) and is shipped as the package `elefant_prompts`, which bot/llm/prompts.py reads with
importlib.resources. This file exists because pyproject.toml can either find packages or map a folder to a
package name, not both.
"""

from setuptools import find_namespace_packages, setup

setup(
    packages=[*find_namespace_packages(include=["bot*", "db*"]), "elefant_prompts"],
    package_dir={"elefant_prompts": "prompts"},
)
