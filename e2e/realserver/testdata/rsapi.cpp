// rsapi: the real-server suite's app linked with the BOINC API
// (Debian's libboinc-app-dev), for the feature cases of apicases_test.go.
// What it does comes from the first line of its input file ("in"):
//
//   trickle SECONDS
//       sends a trickle-up (variety "rstest", body
//       "<rs_up>RESULT</rs_up>") at once and again every 10 s until a
//       trickle-down reaches it (boinc_receive_trickle_down), for at most
//       SECONDS; writes what it received to "out" (each trickle-down file's
//       contents after a "trickle_down FILE:" line) and to stderr, then
//       boinc_finish(0). Without a trickle-down it writes "no trickle-down"
//       and still finishes with 0: the suite's check tells.
//
//   grid SECONDS STEPS
//       reports progress on a fixed grid: after each of STEPS equal steps of
//       SECONDS/STEPS s, boinc_fraction_done(i/STEPS), so every fraction
//       done the client shows must be a multiple of 1/STEPS.
//
// update_versions (the project's tool adding app versions) finds a
// version's api_version by `strings` on its main program, looking for
// "API_VERSION_x.y.z", which boinc_api.cpp puts in every app linked with
// the API statically. Debian's libboinc_api.a is an empty stub, so the app
// links the shared library and carries the string itself, as a statically
// linked app would.
//
// Build: g++ -O2 -o rsapi rsapi.cpp -I/usr/include/boinc -lboinc_api -lboinc -lpthread

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <string>

#include "boinc_api.h"
#include "filesys.h"
#include "version.h"

__attribute__((used)) static const char api_version_tag[] = "API_VERSION_" BOINC_VERSION_STRING;

static double now() {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void nap(double s) {
    struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    // The API's timer signal may cut it short; callers loop on the clock.
    nanosleep(&ts, NULL);
}

static void write_out(const std::string& text) {
    std::string path;
    boinc_resolve_filename_s("out", path);
    FILE* f = boinc_fopen(path.c_str(), "w");
    if (f == NULL) {
        fprintf(stderr, "rsapi: cannot write %s\n", path.c_str());
        boinc_finish(1);
    }
    fputs(text.c_str(), f);
    if (fclose(f) != 0) {
        fprintf(stderr, "rsapi: cannot close %s\n", path.c_str());
        boinc_finish(1);
    }
}

static int run_trickle(double seconds) {
    APP_INIT_DATA aid;
    boinc_get_init_data(aid);
    char up[512];
    snprintf(up, sizeof(up), "<rs_up>%s</rs_up>\n", aid.result_name);
    std::string got;
    double start = now(), last_up = -1;
    while (got.empty() && now() - start < seconds) {
        if (last_up < 0 || now() - last_up >= 10) {
            int rc = boinc_send_trickle_up((char*)"rstest", up);
            fprintf(stderr, "rsapi: trickle-up at %.1f s: %d\n", now() - start, rc);
            last_up = now();
        }
        char name[256];
        while (boinc_receive_trickle_down(name, sizeof(name))) {
            std::string body;
            FILE* f = boinc_fopen(name, "r");
            if (f != NULL) {
                char buf[1024];
                size_t n;
                while ((n = fread(buf, 1, sizeof(buf), f)) > 0) {
                    body.append(buf, n);
                }
                fclose(f);
            }
            boinc_delete_file(name);
            fprintf(stderr, "rsapi: trickle-down %s at %.1f s:\n%s\n", name, now() - start, body.c_str());
            got += "trickle_down " + std::string(name) + ":\n" + body + "\n";
        }
        boinc_fraction_done(got.empty() ? (now() - start) / seconds : 1.0);
        nap(0.1);
    }
    write_out(got.empty() ? "no trickle-down\n" : got);
    return 0;
}

static int run_grid(double seconds, int steps) {
    double start = now();
    boinc_fraction_done(0);
    for (int i = 1; i <= steps; i++) {
        double until = start + seconds * i / steps;
        while (now() < until) {
            nap(until - now());
        }
        boinc_fraction_done((double)i / steps);
    }
    char buf[128];
    snprintf(buf, sizeof(buf), "grid: %.1f s in %d steps\n", seconds, steps);
    write_out(buf);
    return 0;
}

int main() {
    int rc = boinc_init();
    if (rc) {
        fprintf(stderr, "rsapi: boinc_init failed: %d\n", rc);
        exit(rc);
    }
    std::string in_path;
    boinc_resolve_filename_s("in", in_path);
    FILE* in = boinc_fopen(in_path.c_str(), "r");
    char mode[32] = "";
    double seconds = 0;
    int steps = 0;
    if (in == NULL || fscanf(in, "%31s %lf %d", mode, &seconds, &steps) < 2 || seconds <= 0) {
        fprintf(stderr, "rsapi: no valid first line in %s\n", in_path.c_str());
        boinc_finish(1);
    }
    fclose(in);
    fprintf(stderr, "rsapi: %s %.1f s\n", mode, seconds);
    if (!strcmp(mode, "trickle")) {
        rc = run_trickle(seconds);
    } else if (!strcmp(mode, "grid") && steps > 0) {
        rc = run_grid(seconds, steps);
    } else {
        fprintf(stderr, "rsapi: unknown mode %s\n", mode);
        rc = 1;
    }
    boinc_fraction_done(1.0);
    boinc_finish(rc);
    return 0;
}
