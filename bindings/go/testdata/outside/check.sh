#!/bin/sh
# Builds main.go as a module outside the repository, the way a user does: a go.mod whose only addition is
#   require sinter v0.0.0
#   replace sinter => <this checkout>/bindings/go
# and no PKG_CONFIG_PATH, GOFLAGS or LD_LIBRARY_PATH. Runs it with `go run`, then builds it and runs the
# binary itself (which finds libsinter through its rpath).
#   check.sh GO WORK_DIR
set -eu
go=$1
work=$2
here=$(cd "$(dirname "$0")" && pwd)
binding=$(cd "$here/../.." && pwd)
unset LD_LIBRARY_PATH PKG_CONFIG_PATH GOFLAGS
rm -rf "$work"
mkdir -p "$work"
cp "$here/main.go" "$work/"
cd "$work"
cat >go.mod <<EOF_MOD
module example.com/app

go 1.19

require sinter v0.0.0

replace sinter => $binding
EOF_MOD
echo "== go run ."
"$go" run .
echo "== go build, then the binary:"
"$go" build -o app .
./app
