# A throwaway PostgreSQL cluster for the benchmarks; source it, do not run it.
#
#   . scripts/pg_cluster.sh
#   pg_cluster_start NAME      (NAME prefixes its error messages, e.g. bench_pg)
#
# Starts a cluster as the tests do (tests/it/pg_server.rs): initdb into a temp dir under /tmp,
# listening only on a unix socket in that dir, no TCP, no durability; as the OS user `postgres`
# when run as root; stopped and deleted on exit (an EXIT trap; a caller that sets its own EXIT
# trap afterwards calls pg_cluster_stop in it). Superuser `admin`, trusted on the socket.
# None of the caller's libpq settings (PGPASSWORD, PGSSLMODE, PGOPTIONS, ...) apply afterwards.
#
# Sets:
#   pg_bindir    the server binaries: pg_config's bindir, else Debian's newest
#                /usr/lib/postgresql/*/bin, else PATH's
#   pg_psql      psql (the bindir's, else PATH's)
#   pg_work      the temp dir (also the socket dir; owned by postgres when run as root)
#   pg_data      the data dir, $pg_work/data
#   pg_port      the port of the socket's name (.s.PGSQL.PORT)
#   pg_as_server the command prefix that runs a command as the server's OS user (an array)
# Defines:
#   pg_sql DB [psql options]   runs SQL on stdin as admin in DB, stopping at the first error
#   pg_url DB                  prints the store URL of DB (postgres://admin@<socket dir>:PORT/DB)
#   pg_cluster_stop            stops the cluster and deletes $pg_work (idempotent)
# shellcheck shell=bash

pg_cluster_start() { # name
    local name=${1:-pg_cluster} d
    pg_bindir=""
    if command -v pg_config > /dev/null 2>&1 && [ -x "$(pg_config --bindir)/initdb" ]; then
        pg_bindir=$(pg_config --bindir)
    else
        while IFS= read -r d; do
            if [ -x "$d/initdb" ]; then pg_bindir=$d; fi
        done < <(printf '%s\n' /usr/lib/postgresql/*/bin | sort -t/ -k5,5n)
    fi
    if [ -z "$pg_bindir" ] && command -v initdb > /dev/null 2>&1; then
        pg_bindir=$(dirname "$(command -v initdb)")
    fi
    if [ -z "$pg_bindir" ] || [ ! -x "$pg_bindir/pg_ctl" ]; then
        echo "$name: no PostgreSQL server binaries (initdb, pg_ctl); install Debian's postgresql package" >&2
        exit 1
    fi
    pg_psql="$pg_bindir/psql"
    [ -x "$pg_psql" ] || pg_psql=psql

    # PostgreSQL refuses to run as root: then the server runs as the OS user postgres.
    pg_as_server=()
    pg_work=$(mktemp -d /tmp/slpgXXXXXX)
    if [ "$(id -u)" -eq 0 ]; then
        pg_as_server=(runuser -u postgres --)
        chown postgres: "$pg_work"
    fi
    pg_data="$pg_work/data"
    pg_port=5432
    trap pg_cluster_stop EXIT
    trap 'exit 130' INT
    trap 'exit 143' TERM
    for d in $(compgen -e); do
        case $d in PG*) unset "$d" ;; esac
    done

    (cd "$pg_work" && "${pg_as_server[@]}" "$pg_bindir/initdb" -D "$pg_data" -U admin -A trust -E UTF8 \
        --locale=C.UTF-8 --no-sync > "$pg_work/initdb.log" 2>&1) \
        || { cat "$pg_work/initdb.log" >&2; exit 1; }
    printf 'local all admin trust\n' > "$pg_data/pg_hba.conf"
    (cd "$pg_work" && "${pg_as_server[@]}" "$pg_bindir/pg_ctl" -D "$pg_data" -l "$pg_work/server.log" -w -t 60 \
        -o "-c listen_addresses='' -c unix_socket_directories='$pg_work' -c port=$pg_port -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c timezone=UTC -c autovacuum=off" \
        start > /dev/null) || { cat "$pg_work/server.log" >&2; exit 1; }
}

pg_cluster_stop() {
    if [ -n "${pg_work:-}" ]; then
        if [ -f "$pg_data/postmaster.pid" ]; then
            (cd / && "${pg_as_server[@]}" "$pg_bindir/pg_ctl" -D "$pg_data" -m immediate -w stop > /dev/null 2>&1) || true
        fi
        rm -rf "$pg_work"
        pg_work=""
    fi
}

pg_sql() { # database [psql options], SQL on stdin
    local db=$1
    shift
    "$pg_psql" -v ON_ERROR_STOP=1 -X -q -h "$pg_work" -p "$pg_port" -U admin -d "$db" "$@"
}

# admin is trusted on the socket, so the URL needs no password.
pg_url() { # database
    printf 'postgres://admin@%s:%s/%s\n' "$(printf '%s' "$pg_work" | sed 's|/|%2F|g')" "$pg_port" "$1"
}
