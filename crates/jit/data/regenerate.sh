#!/usr/bin/env bash
# Regenerate the name lists that `src/symbols.rs` refuses as exported AOT symbols:
#
#   c_runtime.txt  every symbol the C runtime of a target defines: the dynamic symbol tables of
#                  glibc's libc, libm, libmvec, libpthread, libdl, librt, libutil, libresolv,
#                  libanl, the dynamic loader and libgcc_s, plus the static start files, libgcc.a
#                  and libc_nonshared.a (defined and referenced names: `main` is one);
#   c_headers.txt  every macro and every identifier of the C11/C17 standard headers and the
#                  POSIX headers a C program includes (`gcc -E -dM` for the macros, every
#                  identifier token of the preprocessed headers for typedefs, functions and
#                  objects), with _GNU_SOURCE so that the extensions count too.
#
# For each compiler given (default: gcc, and aarch64-linux-gnu-gcc when installed; the AArch64
# libraries come from gcc-aarch64-linux-gnu and libc6-dev-arm64-cross) the lists are merged.
# Names the C standard reserves (`__x`, `_X`) are left out: `symbol_problem` refuses them by
# rule. Output: sorted, one name a line, into the directory given as $1 (default: this one).
#
#   crates/jit/data/regenerate.sh                # rewrite the shipped lists
#   crates/jit/data/regenerate.sh /tmp/fresh     # what this machine has (the test's use)
set -euo pipefail

out_dir=${1:-$(dirname "$0")}
shift || true
compilers=("$@")
if [ ${#compilers[@]} -eq 0 ]; then
    compilers=(gcc)
    if command -v aarch64-linux-gnu-gcc >/dev/null; then
        compilers+=(aarch64-linux-gnu-gcc)
    fi
fi

nm_tool() {
    if command -v "$1-nm" >/dev/null 2>&1; then echo "$1-nm"; else echo nm; fi
}

shared_libs="libc.so.6 libm.so.6 libmvec.so.1 libpthread.so.0 libdl.so.2 librt.so.1 \
libutil.so.1 libresolv.so.2 libanl.so.1 libgcc_s.so.1 ld-linux-x86-64.so.2 ld-linux-aarch64.so.1"
static_files="crt1.o Scrt1.o crti.o crtn.o crtbeginS.o crtendS.o libc_nonshared.a libgcc.a libgcc_eh.a"

c_headers="assert.h complex.h ctype.h errno.h fenv.h float.h inttypes.h iso646.h limits.h
locale.h math.h setjmp.h signal.h stdalign.h stdarg.h stdatomic.h stdbool.h stddef.h stdint.h
stdio.h stdlib.h stdnoreturn.h string.h tgmath.h threads.h time.h uchar.h wchar.h wctype.h"
posix_headers="aio.h arpa/inet.h cpio.h dirent.h dlfcn.h fcntl.h fnmatch.h ftw.h glob.h grp.h
iconv.h langinfo.h libgen.h monetary.h mqueue.h net/if.h netdb.h netinet/in.h netinet/tcp.h
nl_types.h poll.h pthread.h pwd.h regex.h sched.h search.h semaphore.h spawn.h strings.h
sys/ipc.h sys/mman.h sys/msg.h sys/resource.h sys/select.h sys/sem.h sys/shm.h sys/socket.h
sys/stat.h sys/statvfs.h sys/time.h sys/times.h sys/types.h sys/uio.h sys/un.h sys/utsname.h
sys/wait.h syslog.h tar.h termios.h ulimit.h unistd.h utime.h utmpx.h wordexp.h
link.h elf.h alloca.h malloc.h execinfo.h ucontext.h sys/auxv.h sys/syscall.h sys/ioctl.h
sys/prctl.h sys/epoll.h sys/eventfd.h sys/random.h endian.h byteswap.h err.h error.h getopt.h
paths.h sysexits.h"

# Identifiers only, and not the reserved ones.
keep() { grep -E '^[A-Za-z_][A-Za-z0-9_]*$' | grep -Ev '^(__|_[A-Z])' || true; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
: >"$tmp/runtime"
: >"$tmp/headers"
for cc in "${compilers[@]}"; do
    nm=$(nm_tool "${cc%-gcc}")
    for lib in $shared_libs; do
        path=$("$cc" -print-file-name="$lib")
        [ -f "$path" ] || continue
        "$nm" -D --defined-only "$path" | awk 'NF >= 3 { print $3 }' | sed 's/@.*//' >>"$tmp/runtime"
    done
    for file in $static_files; do
        path=$("$cc" -print-file-name="$file")
        [ -f "$path" ] || continue
        "$nm" "$path" 2>/dev/null | awk '$1 ~ /^[UTDRBWVuiv]$/ { print $2 } NF == 3 && $2 ~ /^[TDRBWVuiv]$/ { print $3 }' >>"$tmp/runtime"
    done
    includes=""
    for h in $c_headers $posix_headers; do
        if echo "#include <$h>" | "$cc" -std=gnu17 -D_GNU_SOURCE -E -x c - >/dev/null 2>&1; then
            includes+="#include <$h>"$'\n'
        fi
    done
    printf '%s' "$includes" >"$tmp/all.c"
    "$cc" -std=gnu17 -D_GNU_SOURCE -E -dM "$tmp/all.c" | awk '$1 == "#define" { sub(/\(.*/, "", $2); print $2 }' >>"$tmp/headers"
    # The ordinary identifiers the headers declare: every identifier token at file scope
    # (typedefs, functions, objects, tags) and in enum bodies (enumeration constants), outside
    # string and character literals; struct and union members and function bodies live in
    # their own scopes and cannot clash with an external symbol.
    "$cc" -std=gnu17 -D_GNU_SOURCE -E -P "$tmp/all.c" \
        | sed -E 's/"([^"\\]|\\.)*"//g; s/'"'"'([^'"'"'\\]|\\.)*'"'"'//g' \
        | grep -oE '[A-Za-z_][A-Za-z0-9_]*|[{};]' \
        | awk '
            $0 == "{" { is_enum[++depth] = (pending == "enum"); pending = ""; next }
            $0 == "}" { if (depth > 0) depth--; pending = ""; next }
            $0 == ";" { pending = ""; next }
            $0 == "struct" || $0 == "union" || $0 == "enum" { pending = $0 }
            depth == 0 || is_enum[depth] { print }
        ' >>"$tmp/headers"
done
keep <"$tmp/runtime" | LC_ALL=C sort -u >"$out_dir/c_runtime.txt"
keep <"$tmp/headers" | LC_ALL=C sort -u >"$out_dir/c_headers.txt"
wc -l "$out_dir/c_runtime.txt" "$out_dir/c_headers.txt" >&2
