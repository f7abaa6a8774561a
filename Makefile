# cairn — build, test, sanitize, fuzz, bench, install.
# Targets: all (build/cairn), test, asan, fuzz, bench, install, clean.

PREFIX  ?= /usr/local
DESTDIR ?=
BUILD   ?= build
CC      ?= cc
PKGS    := ncursesw sqlite3 libzstd libcjson libuv libcurl libcrypto libutf8proc libcmark-gfm
VERSION := 0.1.0

WARN    := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
           -Wwrite-strings -Wformat=2 -Wvla -Wno-unused-parameter
CFLAGS  ?= -O2 -g
CPPFLAGS_ALL := -std=c11 -D_GNU_SOURCE -DCAIRN_VERSION='"$(VERSION)"' -I. \
           $(shell pkg-config --cflags $(PKGS))
LIBS    := $(shell pkg-config --libs $(PKGS)) -lpthread -lm
TESTLIBS := $(shell pkg-config --libs cmocka)
SAN     ?=
ifneq ($(SAN),)
  CFLAGS += -fsanitize=$(SAN) -fno-omit-frame-pointer -fno-sanitize-recover=undefined
  LDSAN  := -fsanitize=$(SAN)
endif

LIB_SRC := $(wildcard base/*.c persist/*.c sink/*.c engine/*.c tui/*.c)
APP_SRC := $(filter-out app/main.c,$(wildcard app/*.c))
LIB_OBJ := $(LIB_SRC:%.c=$(BUILD)/obj/%.o) $(APP_SRC:%.c=$(BUILD)/obj/%.o)
UNIT_SRC := $(wildcard tests/unit/test_*.c)
UNIT_BIN := $(UNIT_SRC:tests/unit/%.c=$(BUILD)/tests/%)
TESTSUPPORT := $(wildcard tests/unit/support_*.c)
TESTSUPPORT_OBJ := $(TESTSUPPORT:%.c=$(BUILD)/obj/%.o)
HELPER_SRC := $(wildcard tests/crash/*.c)
HELPER_BIN := $(HELPER_SRC:tests/crash/%.c=$(BUILD)/tests/%)
BENCH_SRC := $(wildcard bench/bench_*.c)
BENCH_BIN := $(BENCH_SRC:bench/%.c=$(BUILD)/bench/%)
# Programs bench_turn and bench_continue run beside cairn (a baseline client, a program that
# only loads the libraries, an LD_PRELOAD counter of fsyncs); bench/run.sh
# runs only the files directly in BUILD/bench/.
BENCH_AUX := $(BUILD)/bench/aux/baseline_turn $(BUILD)/bench/aux/libs_floor \
             $(BUILD)/bench/aux/fsync_count.so
BENCHSUPPORT := $(wildcard bench/support_*.c)
BENCHSUPPORT_OBJ := $(BENCHSUPPORT:%.c=$(BUILD)/obj/%.o)

.PHONY: all test asan fuzz bench install clean build-tests
# Keep object files: a test run must end with its own summary line.
.SECONDARY:
all: $(BUILD)/cairn

$(BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	@echo "  CC  $<"
	@$(CC) $(CPPFLAGS_ALL) $(CFLAGS) $(WARN) -MMD -MP -c $< -o $@

$(BUILD)/libcairn.a: $(LIB_OBJ)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

$(BUILD)/cairn: $(BUILD)/obj/app/main.o $(BUILD)/libcairn.a
	$(CC) $(LDSAN) -o $@ $^ $(LIBS)

$(BUILD)/tests/%: $(BUILD)/obj/tests/unit/%.o $(TESTSUPPORT_OBJ) $(BUILD)/libcairn.a
	@mkdir -p $(dir $@)
	$(CC) $(LDSAN) -o $@ $^ $(LIBS) $(TESTLIBS)

$(BUILD)/tests/%: $(BUILD)/obj/tests/crash/%.o $(BUILD)/libcairn.a
	@mkdir -p $(dir $@)
	$(CC) $(LDSAN) -o $@ $^ $(LIBS)

$(BUILD)/bench/%: $(BUILD)/obj/bench/%.o $(BENCHSUPPORT_OBJ) $(BUILD)/libcairn.a
	@mkdir -p $(dir $@)
	$(CC) $(LDSAN) -o $@ $^ $(LIBS)

$(BUILD)/bench/aux/%: $(BUILD)/obj/bench/%.o
	@mkdir -p $(dir $@)
	$(CC) $(LDSAN) -o $@ $^ $(LIBS)

$(BUILD)/bench/aux/fsync_count.so: bench/fsync_count.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS_ALL) $(CFLAGS) $(WARN) -fPIC -shared -o $@ $< -ldl

build-tests: $(BUILD)/cairn $(UNIT_BIN) $(HELPER_BIN)

# The whole suite; ends with "N passed, N failed".
test: build-tests
	BUILD=$(BUILD) tests/run.sh

asan:
	$(MAKE) BUILD=build-asan SAN=address,undefined CFLAGS='-O1 -g' test

# Every fuzz/fuzz_*.c target is built and run for FUZZ_SECONDS each.
FUZZ_SECONDS ?= 20
FUZZ_CC ?= clang
FUZZ_TARGETS := $(patsubst fuzz/%.c,%,$(wildcard fuzz/fuzz_*.c))
fuzz:
	$(MAKE) BUILD=build-fuzz CC=$(FUZZ_CC) CFLAGS='-O1 -g -fsanitize=fuzzer-no-link,address,undefined' build-fuzz/libcairn.a
	@mkdir -p build-fuzz/fuzz
	set -e; for t in $(FUZZ_TARGETS); do \
	  $(FUZZ_CC) $(CPPFLAGS_ALL) -O1 -g -fsanitize=fuzzer,address,undefined $(WARN) \
	    fuzz/$$t.c build-fuzz/libcairn.a $(LIBS) -o build-fuzz/fuzz/$$t; \
	done
	set -e; for t in $(FUZZ_TARGETS); do fuzz/run.sh build-fuzz/fuzz/$$t $(FUZZ_SECONDS); done

bench: $(BUILD)/cairn $(BENCH_BIN) $(BENCH_AUX)
	bench/run.sh $(BUILD)

install: $(BUILD)/cairn
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/share/man/man1
	install -m 0755 $(BUILD)/cairn $(DESTDIR)$(PREFIX)/bin/cairn
	install -m 0644 docs/cairn.1 $(DESTDIR)$(PREFIX)/share/man/man1/cairn.1

clean:
	rm -rf build build-asan build-fuzz

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
