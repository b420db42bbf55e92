#!/usr/bin/env bash
# ibv_devinfo from Debian must see the softib device with an ACTIVE port and a nonzero LID.
set -u
libdir=$1
command -v ibv_devinfo >/dev/null || { echo "SKIP: ibverbs-utils not installed"; exit 77; }
fabric=$(mktemp -d /tmp/softib-test.XXXXXX)
trap 'rm -rf "$fabric"' EXIT
out=$(LD_LIBRARY_PATH=$libdir SOFTIB_FABRIC_DIR=$fabric timeout 10 ibv_devinfo -v 2>&1); rc=$?
echo "$out"
[ $rc = 0 ] || { echo "FAIL: rc=$rc"; exit 1; }
echo "$out" | grep -q "hca_id:.*softib0" || { echo "FAIL: no softib0"; exit 1; }
echo "$out" | grep -q "state:.*PORT_ACTIVE" || { echo "FAIL: port not active"; exit 1; }
echo "$out" | grep -Eq "port_lid:[[:space:]]+[1-9]" || { echo "FAIL: no LID"; exit 1; }
echo PASS
