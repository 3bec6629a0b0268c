# ember build. `make` builds the library and the CLI; `make test` runs the
# whole suite (see tests/run_all.sh). Out-of-tree: objects go to $(BUILD).
#   make SAN=1            ASan+UBSan build into build-san/
#   make fuzz             libFuzzer targets (clang) into build-fuzz/

CC      ?= gcc
SAN     ?= 0
BUILD   ?= $(if $(filter 1,$(SAN)),build-san,build)

WARN    := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
           -Wpointer-arith -Wvla -Wformat=2
CFLAGS  ?= -O2 -g
CFLAGS  += -std=c11 -D_GNU_SOURCE -fno-math-errno $(WARN) -Iinclude -Isrc -MMD -MP
LDLIBS  := -lcjson -lm -lpthread

ifeq ($(SAN),1)
CFLAGS  += -O1 -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
LDFLAGS += -fsanitize=address,undefined
endif

LIB_SRC   := $(sort $(shell find src -name '*.c'))
TOOL_SRC  := $(sort $(wildcard tools/*.c))
TEST_SRC  := $(sort $(wildcard tests/unit/test_*.c))
TEST_UTIL := $(filter-out $(TEST_SRC),$(wildcard tests/unit/*.c))

LIB_OBJ   := $(LIB_SRC:%.c=$(BUILD)/%.o)
TOOL_OBJ  := $(TOOL_SRC:%.c=$(BUILD)/%.o)
TESTU_OBJ := $(TEST_UTIL:%.c=$(BUILD)/%.o)
TEST_BIN  := $(TEST_SRC:tests/unit/%.c=$(BUILD)/tests/%)

.PHONY: all lib tests test fuzz clean
.SECONDARY:
all: $(BUILD)/ember $(BUILD)/libember.a
lib: $(BUILD)/libember.a
tests: $(TEST_BIN)

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c $< -o $@

$(BUILD)/libember.a: $(LIB_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(BUILD)/ember: $(TOOL_OBJ) $(BUILD)/libember.a
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/tests/%: $(BUILD)/tests/unit/%.o $(TESTU_OBJ) $(BUILD)/libember.a
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

# libFuzzer targets: one binary per fuzz/fuzz_*.c, linked with the library
# sources built with clang's fuzzer instrumentation.
FUZZ_SRC := $(sort $(wildcard fuzz/fuzz_*.c))
FUZZ_BIN := $(FUZZ_SRC:fuzz/%.c=build-fuzz/%)
FUZZ_CFLAGS := -std=c11 -D_GNU_SOURCE -g -O1 -Iinclude -Isrc -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all
fuzz: $(FUZZ_BIN)
build-fuzz/%: fuzz/%.c $(LIB_SRC)
	@mkdir -p build-fuzz
	clang $(FUZZ_CFLAGS) -o $@ $< $(LIB_SRC) $(LDLIBS)

test:
	tests/run_all.sh

clean:
	rm -rf build build-san build-fuzz

-include $(LIB_OBJ:.o=.d) $(TOOL_OBJ:.o=.d) $(TESTU_OBJ:.o=.d) $(TEST_BIN:$(BUILD)/tests/%=$(BUILD)/tests/unit/%.d)
