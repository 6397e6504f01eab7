# Developer targets. The package itself builds with `pip install -e .` (setup.py).

PYTHON ?= python3
CC ?= gcc
ASAN_DIR := build/asan
ASAN_FLAGS := -std=c11 -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined \
              -fno-sanitize-recover=all -Wall -Wextra -Werror
CTF_CORE := src/cntkio/_native/ctf_core.h src/cntkio/_native/ctf_number.h
FUZZ_MUTATIONS ?= 30
comma := ,

FUZZ_SECONDS ?= 10
FUZZ_RUNS ?= 10000000
NATIVE_FORMATS := cbf htk uci tok rand

.PHONY: asan-test fuzz-corpus fuzz-campaign truncation-campaign

# The C cores under AddressSanitizer + UndefinedBehaviorSanitizer (gcc): the CTF parser fed its
# corpus (each file plus FUZZ_MUTATIONS random mutations of it), then each native format's target
# (tests/fuzz/fuzz_<format>.c with the mutation driver) for FUZZ_SECONDS seconds. Fails on any
# sanitizer report, failed check or hang.
asan-test: $(ASAN_DIR)/ctf_fuzz
	ASAN_OPTIONS=abort_on_error=1:detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
		$(ASAN_DIR)/ctf_fuzz --mutations $(FUZZ_MUTATIONS) tests/fuzz/corpus/*
	$(PYTHON) tests/fuzz/run_fuzz.py --engine driver --seconds $(FUZZ_SECONDS) --out $(ASAN_DIR)/smoke \
		--formats $(subst $(eval) ,$(comma),$(NATIVE_FORMATS))

# The long campaign: FUZZ_RUNS inputs per native format, coverage-guided with libFuzzer where clang
# builds it (apt-get install clang libclang-rt-14-dev), else the mutation driver; one format at a
# time under nice -n 10. Summary: build/fuzz-campaign/summary.json (docs/reliability.md).
fuzz-campaign:
	$(PYTHON) tests/fuzz/run_fuzz.py --runs $(FUZZ_RUNS) --out build/fuzz-campaign

# Files cut short while a reader reads them: 100 trials per format (docs/reliability.md).
truncation-campaign:
	$(PYTHON) tests/fuzz/truncate_trials.py --trials 100

$(ASAN_DIR)/ctf_fuzz: tests/fuzz/ctf_fuzz_main.c $(CTF_CORE)
	mkdir -p $(ASAN_DIR)
	$(CC) $(ASAN_FLAGS) -I src/cntkio/_native tests/fuzz/ctf_fuzz_main.c -o $@ -lm

# Rewrite tests/fuzz/corpus/ (deterministic; needs ../shared/conformance for the CNTK inputs) and
# the native formats' seeds tests/fuzz/corpus_<format>/ (cntkio's own writers).
fuzz-corpus:
	$(PYTHON) tests/fuzz/make_corpus.py
	$(PYTHON) tests/fuzz/make_native_corpus.py
