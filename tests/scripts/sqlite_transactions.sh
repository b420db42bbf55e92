#!/bin/bash
# sqlite_transactions.sh DIR [ROUNDS=40] [PAUSE=0.2]: feeds sqlite3 a loop of transactions on
# DIR/test.db through a FIFO, pausing PAUSE seconds inside each one (after its first write, while
# sqlite3 holds its POSIX locks on the database and its rollback journal is open), so a
# checkpoint most likely lands mid-transaction. Prints "step N" as each round is sent, then what
# sqlite3 answered (written to a file: sqlite3 buffers its output), which ends with the totals
# and PRAGMA integrity_check. The pause is bash's own `read -t` on a FIFO nobody writes (an
# external sleep would do too, but a shell waiting for a child across a restart gets its real
# pid back from waitpid: see the report on pid translation of waits in progress).
set -euo pipefail
dir=$1 rounds=${2:-40} pause=${3:-0.2}
cd "$dir"
rm -f test.db test.db-journal answers.txt statements silence
mkfifo statements silence
exec 5<> silence  # read-write: the open does not wait for a writer, and no data ever comes
sqlite3 test.db < statements > answers.txt &
reader=$!
exec 4> statements
echo "CREATE TABLE t(id INTEGER PRIMARY KEY, k INTEGER, v TEXT);" >&4
echo "CREATE TABLE totals(n INTEGER, s INTEGER); INSERT INTO totals VALUES(0, 0);" >&4
for ((i = 1; i <= rounds; i++)); do
  echo "BEGIN; INSERT INTO t(k, v) VALUES($i, printf('row %04d', $i));" >&4
  echo "step $i"
  read -r -t "$pause" -u 5 || true
  echo "UPDATE t SET k = k * 3 + $i WHERE id % 5 = $i % 5; UPDATE totals SET n = n + 1, s = s + $i; COMMIT;" >&4
  echo "SELECT 'round', n, s FROM totals;" >&4
done
echo "SELECT 'rows', count(*), sum(k), total(length(v)) FROM t;" >&4
echo "PRAGMA integrity_check;" >&4
exec 4>&-
wait "$reader"
cat answers.txt
