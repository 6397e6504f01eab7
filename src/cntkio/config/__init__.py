"""The CNTK configuration language (``.cntk`` config files).

``parse_config(text)`` and ``load_config(argv)`` return the root :class:`ConfigParameters` of a
configuration; values are :class:`ConfigValue` strings converted on demand (``as_int()``,
``as_float()``, ``as_bool()``, ``as_array()``, ``as_params()``). See ``docs/config.md`` for the
language and what differs from CNTK.

The modules import in one direction, each only from those above it (no function-level imports
between them):

1. ``text`` (lexing: comments, brackets, quotes, separators) and ``_node`` (the base class of a
   parameter set, so that the modules below ``params`` recognise one, and ``ConfigArray``); :mod:`cntkio.values`
   (outside this package) turns value text into typed values;
2. ``printer`` (a tree or a Python value as configuration text);
3. ``parser`` (text -> tree; it makes nodes through the set it fills, so it needs no tree class);
4. ``variables`` (``$var$`` substitution; prints a substituted set with the printer);
5. ``params`` (``ConfigParameters``/``ConfigValue``: lookup, lazy conversions);
6. ``loader`` (files, command-line arguments, ``command=`` sections).
"""
from __future__ import annotations

from ..errors import ConfigError
from .loader import Command, command_sections, load_config, load_config_file, parse_config
from .params import ConfigArray, ConfigParameters, ConfigValue
from .printer import dump, format_value

__all__ = ["parse_config", "load_config", "load_config_file", "command_sections", "Command",
           "ConfigParameters", "ConfigValue", "ConfigArray", "ConfigError", "dump", "format_value"]
