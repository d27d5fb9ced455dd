#!/usr/bin/env bash
# A throwaway MariaDB (or MySQL) server in a folder of its own, for the tests, the example and
# the benchmarks: nothing of the machine's own server is touched.
#
#   scripts/mariadb_server.sh start DIR [PORT]   data in DIR/data, socket DIR/mysqld.sock, log
#                                                DIR/server.log; TCP on 127.0.0.1:PORT only when
#                                                a port is given. root@localhost, no password.
#   scripts/mariadb_server.sh stop DIR           stops it (the folder stays).
#
# More server options go in SLAYER_MARIADB_OPTS (TLS certificates, say). The programs are
# Debian's mariadb-server package (`sudo apt-get install mariadb-server`; .ci/run installs it):
# exit 3 when they are missing.
set -euo pipefail

find_bin() {
    local name dir
    for name in "$@"; do
        for dir in /usr/sbin /usr/bin /usr/local/sbin /usr/local/bin; do
            if [ -x "$dir/$name" ]; then
                echo "$dir/$name"
                return 0
            fi
        done
        if command -v "$name" >/dev/null 2>&1; then
            command -v "$name"
            return 0
        fi
    done
    return 1
}

cmd=${1:?usage: mariadb_server.sh start|stop DIR [PORT]}
dir=${2:?usage: mariadb_server.sh start|stop DIR [PORT]}
port=${3:-}

case "$cmd" in
start)
    missing="no MariaDB server programs (mariadbd, mariadb-install-db); install Debian's mariadb-server (sudo apt-get install mariadb-server)"
    server=$(find_bin mariadbd mysqld) || { echo "$missing" >&2; exit 3; }
    install=$(find_bin mariadb-install-db mysql_install_db) || { echo "$missing" >&2; exit 3; }
    client=$(find_bin mariadb mysql) || { echo "$missing" >&2; exit 3; }
    user=$(id -un)
    mkdir -p "$dir/data"
    if ! "$install" --no-defaults --datadir="$dir/data" --user="$user" \
        --auth-root-authentication-method=normal --skip-test-db >"$dir/install.log" 2>&1; then
        cat "$dir/install.log" >&2
        exit 1
    fi
    if [ -n "$port" ]; then
        net=(--port="$port" --bind-address=127.0.0.1)
    else
        net=(--skip-networking)
    fi
    # shellcheck disable=SC2086
    setsid "$server" --no-defaults --datadir="$dir/data" --socket="$dir/mysqld.sock" "${net[@]}" \
        --user="$user" --pid-file="$dir/mysqld.pid" --log-error="$dir/server.log" \
        --skip-log-bin --skip-name-resolve --innodb-buffer-pool-size=256M \
        --max-connections=300 --character-set-server=utf8mb4 \
        --collation-server=utf8mb4_general_ci ${SLAYER_MARIADB_OPTS:-} \
        </dev/null >/dev/null 2>&1 &
    pid=$!
    for _ in $(seq 1 600); do
        if "$client" --no-defaults -S "$dir/mysqld.sock" -uroot -e 'SELECT 1' >/dev/null 2>&1; then
            exit 0
        fi
        if ! kill -0 "$pid" 2>/dev/null; then
            echo "the MariaDB server in $dir stopped while starting:" >&2
            tail -20 "$dir/server.log" >&2 || true
            exit 1
        fi
        sleep 0.1
    done
    echo "the MariaDB server in $dir did not answer within 60 s:" >&2
    tail -20 "$dir/server.log" >&2 || true
    exit 1
    ;;
stop)
    if [ -f "$dir/mysqld.pid" ]; then
        pid=$(cat "$dir/mysqld.pid")
        kill "$pid" 2>/dev/null || true
        for _ in $(seq 1 300); do
            kill -0 "$pid" 2>/dev/null || exit 0
            sleep 0.1
        done
        kill -9 "$pid" 2>/dev/null || true
    fi
    ;;
*)
    echo "usage: mariadb_server.sh start|stop DIR [PORT]" >&2
    exit 2
    ;;
esac
