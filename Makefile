# ember build. `make` builds the libraries (libember.a, libember.so) and the
# CLI; `make test` runs the whole suite (see tests/run_all.sh). Out-of-tree:
# objects go to $(BUILD).
#   make install PREFIX=DIR [DESTDIR=...]   headers, both libraries, ember.pc, the CLI
#   make uninstall PREFIX=DIR
#   make SAN=1            ASan+UBSan build into build-san/
#   make fuzz             libFuzzer targets (clang) into build-fuzz/

CC      ?= gcc
SAN     ?= 0
BUILD   ?= $(if $(filter 1,$(SAN)),build-san,build)

WARN    := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
           -Wpointer-arith -Wvla -Wformat=2
CFLAGS  ?= -O2 -g
# GCC's -O2 vectorizer takes only loops whose trip count it knows; the dynamic
# cost model (-O3's) also vectorizes the elementwise loops of the forward
# pass (norms, RoPE, residuals, attention's softmax bookkeeping), ~6% of a
# 1.7B prefill. It never reorders a floating-point sum, so results do not
# change. Clang's -O2 vectorizes those already (and rejects the flag).
VECTORIZE := $(if $(findstring clang,$(shell $(CC) --version 2>/dev/null)),,-fvect-cost-model=dynamic)
CFLAGS  += -std=c11 -D_GNU_SOURCE -fno-math-errno $(VECTORIZE) $(WARN) -Iinclude -Isrc -MMD -MP
LDLIBS  := -lcjson -lpcre2-8 -lutf8proc -lmicrohttpd -lsoxr -lfftw3f -lprotobuf-c -lm -lpthread -ldl

# The shared library's version: SONAME libember.so.$(ABI_MAJOR). Bump
# ABI_MAJOR when a change breaks callers (see lib/ember.symbols).
# The version is the one include/ember.h declares (EMBER_VERSION_*).
VERSION   := $(shell awk '/^\#define EMBER_VERSION_(MAJOR|MINOR|PATCH)/ {v = v (v == "" ? "" : ".") $$3} END {print v}' include/ember.h)
ABI_MAJOR := 0
SONAME    := libember.so.$(ABI_MAJOR)
PREFIX    ?= /usr/local

ifeq ($(SAN),1)
CFLAGS  += -O1 -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
LDFLAGS += -fsanitize=address,undefined
endif

LIB_SRC   := $(sort $(shell find src -name '*.c'))
TOOL_SRC  := $(sort $(wildcard tools/*.c))
TEST_SRC  := $(sort $(wildcard tests/unit/test_*.c))
TEST_UTIL := $(filter-out $(TEST_SRC),$(wildcard tests/unit/*.c))

LIB_OBJ   := $(LIB_SRC:%.c=$(BUILD)/pic/%.o) $(BUILD)/pic/gen/onnx/onnx.pb-c.o
TOOL_OBJ  := $(TOOL_SRC:%.c=$(BUILD)/%.o)
TESTU_OBJ := $(TEST_UTIL:%.c=$(BUILD)/%.o)
TEST_BIN  := $(TEST_SRC:tests/unit/%.c=$(BUILD)/tests/%)
BENCH_SRC := $(sort $(wildcard bench/*.c))
BENCH_BIN := $(BENCH_SRC:bench/%.c=$(BUILD)/bench/%)

.PHONY: all lib tests test fuzz clean bench neon-test install uninstall examples public-check
.SECONDARY:
all: $(BUILD)/ember $(BUILD)/libember.a $(BUILD)/libember.so $(BUILD)/$(SONAME) examples
lib: $(BUILD)/libember.a $(BUILD)/libember.so $(BUILD)/$(SONAME)
tests: $(TEST_BIN) $(BUILD)/tests/onnx_parity $(BUILD)/tests/tts_onnx_parity $(BUILD)/tests/c2w_onnx_parity

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c $< -o $@

# Library objects are position-independent (in their own folder, so objects of
# an older non-PIC build are never picked up): the same objects go into both
# libraries. -fno-semantic-interposition keeps calls inside the library direct.
$(BUILD)/pic/src/%.o: src/%.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -fPIC -fno-semantic-interposition -c $< -o $@

# The browser UI: the files of src/serve/ui/ go into the library as data by
# the assembler's .incbin in src/serve/ui_assets.c, so its object (the only
# one that reads them) is rebuilt when one of them changes.
UI_FILES := $(sort $(wildcard src/serve/ui/*))
$(BUILD)/pic/src/serve/ui_assets.o build-fuzz/src/serve/ui_assets.o: $(UI_FILES)

# ONNX's message types in C, generated at build time by protoc-c from the
# onnx.proto Debian ships (libonnx-dev; python3-onnx carries the same file):
# src/onnx/ writes and reads models through them. Generated code is compiled
# without -Werror (it is not ours to fix) but with the library's other flags.
ONNX_PROTO ?= $(firstword $(wildcard /usr/include/onnx/onnx.proto /usr/lib/python3/dist-packages/onnx/onnx.proto))
GEN_CFLAGS := $(filter-out -Werror -Wmissing-prototypes -Wstrict-prototypes,$(CFLAGS))
$(BUILD)/gen/onnx/onnx.pb-c.c $(BUILD)/gen/onnx/onnx.pb-c.h: $(ONNX_PROTO)
	@test -n "$(ONNX_PROTO)" || { echo "onnx.proto not found: run scripts/setup.sh (libonnx-dev)" >&2; exit 1; }
	@mkdir -p $(BUILD)/gen/onnx
	cp $(ONNX_PROTO) $(BUILD)/gen/onnx/onnx.proto
	cd $(BUILD)/gen/onnx && protoc-c --c_out=. onnx.proto
$(BUILD)/pic/gen/onnx/onnx.pb-c.o: $(BUILD)/gen/onnx/onnx.pb-c.c
	@mkdir -p $(dir $@)
	$(CC) $(GEN_CFLAGS) -fPIC -I$(BUILD)/gen/onnx -c $< -o $@
$(BUILD)/pic/src/onnx/%.o: CFLAGS += -I$(BUILD)/gen/onnx
$(filter $(BUILD)/pic/src/onnx/%,$(LIB_OBJ)): | $(BUILD)/gen/onnx/onnx.pb-c.h
$(BUILD)/tests/unit/test_onnx.o: CFLAGS += -I$(BUILD)/gen/onnx
$(BUILD)/tests/unit/test_onnx.o: | $(BUILD)/gen/onnx/onnx.pb-c.h

$(BUILD)/libember.a: $(LIB_OBJ)
	@rm -f $@
	ar rcs $@ $^

# Only the symbols of the public headers are exported (lib/ember.map); the
# committed list lib/ember.symbols is what tests/e2e/abi.sh compares with.
SO_LDFLAGS := -shared -Wl,-soname,$(SONAME) -Wl,--version-script=lib/ember.map \
              $(if $(filter 1,$(SAN)),,-Wl,--no-undefined)
$(BUILD)/libember.so: $(LIB_OBJ) lib/ember.map
	$(CC) $(LDFLAGS) $(SO_LDFLAGS) -o $@ $(LIB_OBJ) $(LDLIBS)
$(BUILD)/$(SONAME): $(BUILD)/libember.so
	ln -sf libember.so $@

# Clients of the public API only: examples/ (and, as they move onto it, the
# user-facing CLI commands in PUBLIC_ONLY) compile with include/ alone on the
# include path (no -Isrc, no _GNU_SOURCE, C99), so including a src/ header
# fails the build.
EXAMPLE_SRC   := $(sort $(wildcard examples/*.c))
EXAMPLE_BIN   := $(EXAMPLE_SRC:examples/%.c=$(BUILD)/examples/%)
PUBLIC_CFLAGS := -std=c99 -O2 -g $(WARN) -Iinclude $(filter -fsanitize% -fno-sanitize% -fno-omit%,$(CFLAGS))
examples: $(EXAMPLE_BIN)

# The user-facing CLI commands converted to the public API so far, and the
# shared CLI files they use: compiled here with include/ (and tools/ for
# cli_public.h) only, so one that includes a src/ header (or cli.h, which
# does) fails `make public-check` (run by tests/e2e/public_cli.sh).
PUBLIC_CLI := tools/ember.c tools/cmd_generate.c tools/cmd_chat.c tools/cmd_quantize.c tools/cmd_decode_codes.c tools/cmd_tts.c tools/cmd_tts_codes.c tools/cli_tts.c tools/cli_tts_voice.c tools/cmd_voice.c tools/cmd_tokenize.c tools/cmd_template.c tools/cmd_probe.c tools/cli_sampling.c tools/cli_profile.c tools/cli_common.c tools/cli_stats.c tools/cli_measure.c tools/cmd_export.c
PUBLIC_CLI_CFLAGS := -std=c11 -D_GNU_SOURCE -fsyntax-only $(WARN) -Iinclude
public-check:
	@for f in $(PUBLIC_CLI); do \
	  $(CC) $(PUBLIC_CLI_CFLAGS) $$f || { echo "public-check: $$f needs more than include/" >&2; exit 1; }; \
	done; echo "public-check: $(words $(PUBLIC_CLI)) files use include/ only: $(notdir $(PUBLIC_CLI))"
$(BUILD)/examples/%: examples/%.c $(wildcard include/*.h) $(BUILD)/libember.a
	@mkdir -p $(dir $@)
	$(CC) $(PUBLIC_CFLAGS) $(LDFLAGS) -o $@ $< $(BUILD)/libember.a $(LDLIBS)

# Headers of the public API (include/*.h), both libraries, ember.pc and the CLI.
INSTALL_HDR := $(sort $(wildcard include/*.h))
DEST        := $(DESTDIR)$(PREFIX)
install: all
	install -d $(DEST)/bin $(DEST)/lib/pkgconfig $(DEST)/include
	install -m 0755 $(BUILD)/ember $(DEST)/bin/ember
	install -m 0644 $(INSTALL_HDR) $(DEST)/include/
	install -m 0644 $(BUILD)/libember.a $(DEST)/lib/libember.a
	install -m 0755 $(BUILD)/libember.so $(DEST)/lib/libember.so.$(VERSION)
	ln -sf libember.so.$(VERSION) $(DEST)/lib/$(SONAME)
	ln -sf $(SONAME) $(DEST)/lib/libember.so
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@VERSION@|$(VERSION)|' \
	    -e 's|@LIBS_PRIVATE@|$(LDLIBS)|' lib/ember.pc.in >$(DEST)/lib/pkgconfig/ember.pc
uninstall:
	rm -f $(DEST)/bin/ember $(DEST)/lib/libember.a $(DEST)/lib/libember.so \
	      $(DEST)/lib/$(SONAME) $(DEST)/lib/libember.so.$(VERSION) \
	      $(DEST)/lib/pkgconfig/ember.pc $(INSTALL_HDR:include/%=$(DEST)/include/%)

$(BUILD)/ember: $(TOOL_OBJ) $(BUILD)/libember.a
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/tests/%: $(BUILD)/tests/unit/%.o $(TESTU_OBJ) $(BUILD)/libember.a
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

# The exported ONNX steps (Spark's; the TTS talker's and predictor's) through
# ONNX Runtime against the native steps (tests/e2e/onnx.sh runs them with the
# library tests/onnx/install.sh fetches).
$(BUILD)/tests/onnx_parity $(BUILD)/tests/tts_onnx_parity $(BUILD)/tests/c2w_onnx_parity: $(BUILD)/tests/%: $(BUILD)/tests/onnx/%.o $(BUILD)/libember.a
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

# Benchmarks print JSON; e.g. `make bench && build/bench/kernels`.
bench: $(BENCH_BIN)
$(BUILD)/bench/%: $(BUILD)/bench/%.o $(BUILD)/libember.a
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)
# takes weight types by the CLI's names (tools/cli_common.c)
$(BUILD)/bench/quant_quality: $(BUILD)/bench/quant_quality.o $(BUILD)/tools/cli_common.o $(BUILD)/libember.a
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

# libFuzzer targets: one binary per fuzz/fuzz_*.c, linked with the library
# built once with clang's fuzzer instrumentation (-fsanitize=fuzzer-no-link
# on the library objects, the fuzzer's main only in each target).
FUZZ_SRC := $(sort $(wildcard fuzz/fuzz_*.c))
FUZZ_BIN := $(FUZZ_SRC:fuzz/%.c=build-fuzz/%)
FUZZ_CFLAGS := -std=c11 -D_GNU_SOURCE -g -O1 -Iinclude -Isrc -fno-sanitize-recover=all
FUZZ_LIB_CFLAGS := $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link,address,undefined -MMD -MP
FUZZ_OBJ := $(LIB_SRC:%.c=build-fuzz/%.o) build-fuzz/gen/onnx/onnx.pb-c.o
build-fuzz/gen/onnx/onnx.pb-c.o: build/gen/onnx/onnx.pb-c.c
	@mkdir -p $(dir $@)
	clang $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link,address,undefined -Ibuild/gen/onnx -c $< -o $@
build-fuzz/src/onnx/%.o: FUZZ_LIB_CFLAGS += -Ibuild/gen/onnx
# The SIMD kernels go uninstrumented: the fuzz targets exercise parsers, and
# the kernels are checked under ASan+UBSan by the unit tests (SAN=1). Clang's
# fuzzer+ASan+UBSan instrumentation of their intrinsics took 126 and 156 CPU
# seconds for matmul_avx512.c and kquants_prefill_avx512.c alone (2.4 and 1.8
# plain), close to half of the whole fuzz build.
build-fuzz/src/kernels/%.o: FUZZ_LIB_CFLAGS := $(FUZZ_CFLAGS) -MMD -MP
$(filter build-fuzz/src/onnx/%,$(FUZZ_OBJ)): | build/gen/onnx/onnx.pb-c.h
fuzz: $(FUZZ_BIN)
build-fuzz/%.o: %.c
	@mkdir -p $(dir $@)
	clang $(FUZZ_LIB_CFLAGS) -c $< -o $@
build-fuzz/libember.a: $(FUZZ_OBJ)
	@rm -f $@
	ar rcs $@ $^
build-fuzz/%: fuzz/%.c build-fuzz/libember.a
	@mkdir -p build-fuzz
	clang $(FUZZ_CFLAGS) -fsanitize=fuzzer,address,undefined -o $@ $< build-fuzz/libember.a $(LDLIBS)

# ARM NEON kernels: the kernel unit test cross-built with Debian's aarch64
# compiler and run under qemu-user, once on qemu's default CPU (with dotprod)
# and once as a Cortex-A53 (without), so both paths of the neon set run. The
# test needs only src/kernels, src/base and src/io/tensor.c (no cJSON);
# test_kquants (the K-quant decoders and quantizers, as AArch64 builds them)
# adds the GGUF reader.
CROSS_CC  ?= aarch64-linux-gnu-gcc
QEMU_A64  ?= qemu-aarch64 -L /usr/aarch64-linux-gnu
NEON_SRC  := $(sort $(wildcard src/kernels/*.c)) src/base/pool.c src/base/status.c src/base/large_alloc.c \
             src/io/tensor.c tests/unit/check.c
NEON_HDR  := $(wildcard include/*.h src/kernels/*.h src/base/*.h src/io/tensor.h src/io/gguf.h tests/unit/check.h)
build/neon/test_kernels: $(NEON_SRC) tests/unit/test_kernels.c $(NEON_HDR)
build/neon/test_kquants: $(NEON_SRC) src/io/gguf.c tests/unit/test_kquants.c $(NEON_HDR)
build/neon/test_%:
	@mkdir -p build/neon
	$(CROSS_CC) -O2 -g -std=c11 -D_GNU_SOURCE -fno-math-errno $(WARN) -Iinclude -Isrc -o $@ \
	    $(filter %.c,$^) -lm -lpthread
neon-test: build/neon/test_kernels build/neon/test_kquants
	$(QEMU_A64) build/neon/test_kernels
	QEMU_CPU=cortex-a53 $(QEMU_A64) build/neon/test_kernels
	$(QEMU_A64) build/neon/test_kquants

test:
	tests/run_all.sh

clean:
	rm -rf build build-san build-fuzz

-include $(FUZZ_OBJ:.o=.d) $(LIB_OBJ:.o=.d) $(TOOL_OBJ:.o=.d) $(TESTU_OBJ:.o=.d) $(BENCH_BIN:%=%.d) $(TEST_BIN:$(BUILD)/tests/%=$(BUILD)/tests/unit/%.d) $(BUILD)/tests/onnx/onnx_parity.d $(BUILD)/tests/onnx/tts_onnx_parity.d
