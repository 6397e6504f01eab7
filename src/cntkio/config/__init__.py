"""The CNTK configuration language (``.cntk`` config files).

``parse_config(text)`` and ``load_config(argv)`` return the root :class:`ConfigParameters` of a
configuration; values are :class:`ConfigValue` strings converted on demand (``as_int()``,
``as_float()``, ``as_bool()``, ``as_array()``, ``as_params()``). See ``docs/config.md`` for the
language and what differs from CNTK.
"""
from __future__ import annotations

from ..errors import ConfigError
from .loader import Command, command_sections, load_config, load_config_file, parse_config
from .params import ConfigArray, ConfigParameters, ConfigValue
from .printer import dump, format_value

__all__ = ["parse_config", "load_config", "load_config_file", "command_sections", "Command",
           "ConfigParameters", "ConfigValue", "ConfigArray", "ConfigError", "dump", "format_value"]
