# Developer targets. The package itself builds with `pip install -e .` (setup.py).

PYTHON ?= python3
CC ?= gcc
ASAN_DIR := build/asan
ASAN_FLAGS := -std=c11 -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined \
              -fno-sanitize-recover=all -Wall -Wextra -Werror
CTF_CORE := src/cntkio/_native/ctf_core.h src/cntkio/_native/ctf_number.h
FUZZ_MUTATIONS ?= 30

.PHONY: asan-test fuzz-corpus

# The C CTF parser core under AddressSanitizer + UndefinedBehaviorSanitizer, fed the fuzz corpus
# (each file plus FUZZ_MUTATIONS random mutations of it). Fails on any sanitizer report.
asan-test: $(ASAN_DIR)/ctf_fuzz
	ASAN_OPTIONS=abort_on_error=1:detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
		$(ASAN_DIR)/ctf_fuzz --mutations $(FUZZ_MUTATIONS) tests/fuzz/corpus/*

$(ASAN_DIR)/ctf_fuzz: tests/fuzz/ctf_fuzz_main.c $(CTF_CORE)
	mkdir -p $(ASAN_DIR)
	$(CC) $(ASAN_FLAGS) -I src/cntkio/_native tests/fuzz/ctf_fuzz_main.c -o $@ -lm

# Rewrite tests/fuzz/corpus/ (deterministic; needs ../shared/conformance for the CNTK inputs).
fuzz-corpus:
	$(PYTHON) tests/fuzz/make_corpus.py
