#!/usr/bin/env bash
# `--prompt-cache FILE` on the committed demo model: a second run of the same
# prompt restores all of it but the last token and samples what the first
# run sampled; a prompt that shares only the system message resumes after
# the special token where the two part; a chat continues from its file;
# files for another model, truncated or corrupt ones are refused naming why;
# and a save killed with SIGKILL half-way leaves the previous file whole.
source "$(dirname "$0")/lib.sh"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
M=models/demo
sys='<|im_start|>system
You are a helpful assistant. Answer briefly and call tools when they help.<|im_end|>
<|im_start|>user
'
p1="${sys}What is the capital of France?<|im_end|>
<|im_start|>assistant
"
p2="${sys}Tell me a joke about cats.<|im_end|>
<|im_start|>assistant
"
cached() { grep -o '([0-9]* from the prompt cache)' "$1" | tr -dc 0-9; }
n_tokens() { printf '%s' "$1" | "$EMBER" tokenize -m $M | wc -w; }

# The same prompt twice: all but its last token come from the file, and the
# continuation is the first run's (the state restored is the state saved).
a=$("$EMBER" generate -m $M -p "$p1" -n 12 --greedy --prompt-cache "$tmp/pc" 2>"$tmp/e1")
b=$("$EMBER" generate -m $M -p "$p1" -n 12 --greedy --prompt-cache "$tmp/pc" 2>"$tmp/e2")
n1=$(n_tokens "$p1")
if [ "$(cached "$tmp/e1")" = 0 ] && [ "$(cached "$tmp/e2")" = $((n1 - 1)) ] && [ -n "$a" ] && [ "$a" = "$b" ]
then pass same_prompt_resumes_from_file
else fail same_prompt_resumes_from_file "$(cat "$tmp/e1" "$tmp/e2")" "a: $a" "b: $b"; fi

# Another question after the same system message: resumed up to the
# <|im_start|> that opens the user's turn (counted by the tokenizer).
"$EMBER" generate -m $M -p "$p2" -n 4 --greedy --prompt-cache "$tmp/pc" >/dev/null 2>"$tmp/e3"
want=$(n_tokens "${sys%user*}")
if [ "$(cached "$tmp/e3")" = "$want" ]; then pass shared_system_prompt_resumes_at_its_mark
else fail shared_system_prompt_resumes_at_its_mark "want $want cached" "$(cat "$tmp/e3")"; fi

# A chat continues from its file: the second process runs only the new turn.
# The first reply must not open with reasoning: the chat template leaves an
# earlier turn's <think> block out of the history, so the tokens cached after
# it are not the next prompt's (the demo model reasons about "Hello there").
printf 'How are you?\n' | "$EMBER" chat -m $M -n 8 --greedy --prompt-cache "$tmp/chat" >/dev/null 2>"$tmp/c1"
printf 'And again\n' | "$EMBER" chat -m $M -n 8 --greedy --prompt-cache "$tmp/chat" >/dev/null 2>"$tmp/c2"
held=$(grep -o '[0-9]* tokens cached' "$tmp/c2" | tr -dc 0-9)
run=$(grep -o '\[[0-9]* of [0-9]* prompt tokens run' "$tmp/c2" | tr -d '[' | awk '{print $3 - $1}')
if [ -n "$held" ] && [ "$held" -gt 0 ] && [ "$run" = "$held" ]; then pass chat_continues_from_file
else fail chat_continues_from_file "held '$held', reused '$run'" "$(cat "$tmp/c2")"; fi

# Refused with a clear error: another model, a truncated or a corrupt file.
expect_error other_model_is_refused "another model" \
  "$EMBER" generate -m models/tiny -p "$p1" -n 1 --prompt-cache "$tmp/pc"
head -c 5000 "$tmp/pc" >"$tmp/short"
expect_error truncated_file_is_refused "truncated or corrupt" \
  "$EMBER" generate -m $M -p "$p1" -n 1 --prompt-cache "$tmp/short"
cp "$tmp/pc" "$tmp/bad"
printf '\x55' | dd of="$tmp/bad" bs=1 seek=20000 conv=notrunc status=none
expect_error corrupt_file_is_refused "checksum mismatch" \
  "$EMBER" generate -m $M -p "$p1" -n 1 --prompt-cache "$tmp/bad"

# kill -9 in the middle of a save: every write to a file is slowed (an
# LD_PRELOAD shim) so the save is caught while its temporary file grows;
# the target keeps its previous bytes (the run of p2 above) and still
# resumes all but the last token of p2.
cat >"$tmp/slow.c" <<'C'
#define _GNU_SOURCE
#include <dlfcn.h>
#include <time.h>
#include <unistd.h>
ssize_t write(int fd, const void *buf, size_t n)
{
    static ssize_t (*real)(int, const void *, size_t);
    if (!real) real = (ssize_t (*)(int, const void *, size_t))dlsym(RTLD_NEXT, "write");
    struct timespec pause = {0, 40 * 1000 * 1000};
    if (fd > 2) nanosleep(&pause, NULL);
    return real(fd, buf, n);
}
C
if cc -shared -fPIC -o "$tmp/slow.so" "$tmp/slow.c" -ldl 2>"$tmp/cc.err"; then
  cp "$tmp/pc" "$tmp/before"
  ASAN_OPTIONS=verify_asan_link_order=0 LD_PRELOAD="$tmp/slow.so" "$EMBER" generate -m $M -p "$p2 More." -n 2 --greedy \
    --prompt-cache "$tmp/pc" >/dev/null 2>&1 &
  pid=$!
  for _ in $(seq 600); do  # up to a minute for the model to load and run
    compgen -G "$tmp/pc.??????" >/dev/null && break
    sleep 0.1
  done
  partial=$(compgen -G "$tmp/pc.??????" | head -1)
  kill -9 $pid 2>/dev/null; wait $pid 2>/dev/null; rc=$?
  if [ -n "$partial" ] && [ $rc = 137 ] && cmp -s "$tmp/before" "$tmp/pc" &&
     "$EMBER" generate -m $M -p "$p2" -n 1 --greedy --prompt-cache "$tmp/pc" >/dev/null 2>"$tmp/e4" &&
     [ "$(cached "$tmp/e4")" = $(($(n_tokens "$p2") - 1)) ]
  then pass killed_save_leaves_previous_file
  else fail killed_save_leaves_previous_file "temp '$partial', exit $rc" "$(cat "$tmp/e4" 2>/dev/null)"; fi
else
  fail killed_save_leaves_previous_file "cannot build the write shim: $(cat "$tmp/cc.err")"
fi
exit $e2e_failed
