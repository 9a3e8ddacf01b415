// apiapp: a small science app linked against the real BOINC API library
// (Debian's libboinc-app-dev), used by package apptest to prove that
// boincd drives real BOINC-API apps.
//
// Usage: apiapp [--seconds N] [--mem MB] [--idle] [--fraction-log FILE]
//
//   --seconds N  do N seconds of CPU work (thread CPU time, so time spent
//                suspended does not count), default 8
//   --idle       sleep instead of computing: N seconds of wall time, the
//                worker waking every 0.1 s (for tests that only exercise
//                the library's timer thread and must not load the host)
//   --mem MB     allocate MB megabytes and keep touching them while
//                working (for the memory-limit test), default 0
//   --fraction-log FILE
//                append every fraction done the app reports to FILE (in
//                the slot), one per line in the API's own "%e" format,
//                before reporting it: the test compares the client's view
//                with what the app really reported
//
// The app reads its input through boinc_resolve_filename("in"), reports
// progress with boinc_fraction_done, writes a checkpoint file whenever
// boinc_time_to_checkpoint says so, resumes from that checkpoint on start
// (printing "apiapp: resumed from checkpoint at X" to stderr), writes its
// output through boinc_resolve_filename("out") and ends with
// boinc_finish(0).
//
// Build: g++ -O2 -o apiapp apiapp.cpp -I/usr/include/boinc
//            -lboinc_api -lboinc -lpthread

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <string>

#include "boinc_api.h"
#include "filesys.h"

static const char* kCheckpoint = "apiapp_state.txt";

// thread_cpu is this thread's CPU time: the work clock. The BOINC API
// suspends the worker thread inside a signal handler, where it sleeps,
// so a suspended app's work clock stops.
static double thread_cpu() {
    struct timespec ts;
    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0) {
        return 0;
    }
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

// wall is the monotonic clock: the work clock of an --idle run.
static double wall() {
    struct timespec ts;
    if (clock_gettime(CLOCK_MONOTONIC, &ts) != 0) {
        return 0;
    }
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

// read_checkpoint returns the work seconds done by earlier runs and the
// running checksum, or 0 when there is no valid checkpoint.
static double read_checkpoint(unsigned long long* sum) {
    std::string path;
    if (boinc_resolve_filename_s(kCheckpoint, path) != 0) {
        return 0;
    }
    FILE* f = boinc_fopen(path.c_str(), "r");
    if (f == NULL) {
        return 0;
    }
    double done = 0;
    unsigned long long s = 0;
    int n = fscanf(f, "%lf %llu", &done, &s);
    fclose(f);
    if (n != 2 || done < 0) {
        fprintf(stderr, "apiapp: ignoring malformed checkpoint %s\n", path.c_str());
        return 0;
    }
    *sum = s;
    return done;
}

// write_checkpoint replaces the checkpoint atomically (write, then rename)
// so a kill mid-write leaves the previous one.
static int write_checkpoint(double done, unsigned long long sum) {
    std::string path;
    if (boinc_resolve_filename_s(kCheckpoint, path) != 0) {
        return -1;
    }
    std::string tmp = path + ".tmp";
    FILE* f = boinc_fopen(tmp.c_str(), "w");
    if (f == NULL) {
        fprintf(stderr, "apiapp: cannot write checkpoint %s: %s\n", tmp.c_str(), strerror(errno));
        return -1;
    }
    fprintf(f, "%.6f %llu\n", done, sum);
    if (fclose(f) != 0) {
        return -1;
    }
    return rename(tmp.c_str(), path.c_str());
}

int main(int argc, char** argv) {
    double seconds = 8;
    long mem_mb = 0;
    bool idle = false;
    const char* fraction_log = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--seconds") && i + 1 < argc) {
            seconds = atof(argv[++i]);
        } else if (!strcmp(argv[i], "--mem") && i + 1 < argc) {
            mem_mb = atol(argv[++i]);
        } else if (!strcmp(argv[i], "--idle")) {
            idle = true;
        } else if (!strcmp(argv[i], "--fraction-log") && i + 1 < argc) {
            fraction_log = argv[++i];
        }
    }

    int rc = boinc_init();
    if (rc) {
        fprintf(stderr, "apiapp: boinc_init failed: %d\n", rc);
        exit(rc);
    }

    // Input: its bytes seed the checksum, so the output depends on it.
    std::string in_path;
    boinc_resolve_filename_s("in", in_path);
    unsigned long long sum = 14695981039346656037ULL; // FNV-1a offset basis
    long in_bytes = 0;
    FILE* in = boinc_fopen(in_path.c_str(), "rb");
    if (in != NULL) {
        int c;
        while ((c = fgetc(in)) != EOF) {
            sum = (sum ^ (unsigned char)c) * 1099511628211ULL;
            in_bytes++;
        }
        fclose(in);
    } else {
        fprintf(stderr, "apiapp: no input at %s\n", in_path.c_str());
    }
    unsigned long long input_sum = sum;

    unsigned long long saved_sum = 0;
    double done = read_checkpoint(&saved_sum);
    if (done > 0) {
        sum = saved_sum;
        fprintf(stderr, "apiapp: resumed from checkpoint at %.3f\n", done);
    } else {
        fprintf(stderr, "apiapp: starting: %.1f seconds of work, %ld MB\n", seconds, mem_mb);
    }

    char* mem = NULL;
    size_t mem_bytes = (size_t)mem_mb << 20;
    if (mem_bytes > 0) {
        mem = (char*)malloc(mem_bytes);
        if (mem == NULL) {
            fprintf(stderr, "apiapp: cannot allocate %ld MB\n", mem_mb);
            boinc_finish(1);
        }
        memset(mem, 1, mem_bytes);
    }

    FILE* flog = NULL;
    if (fraction_log != NULL) {
        flog = fopen(fraction_log, "a");
        if (flog == NULL) {
            fprintf(stderr, "apiapp: cannot open %s: %s\n", fraction_log, strerror(errno));
            boinc_finish(1);
        }
    }

    double (*clock)() = idle ? wall : thread_cpu;
    double start = clock();
    double base = done;
    size_t page = 0;
    while (done < seconds) {
        if (idle) {
            // The API's SIGALRM may cut the sleep short; the clock, not
            // the sleep, measures the work.
            struct timespec step = {0, 100000000};
            nanosleep(&step, NULL);
        } else {
            // Real CPU work: a few million multiply-xors per step.
            for (int i = 0; i < 2000000; i++) {
                sum = (sum ^ (unsigned long long)i) * 1099511628211ULL;
            }
        }
        if (mem != NULL) {
            // Keep the allocation resident: touch a stride of pages.
            for (int i = 0; i < 256; i++) {
                mem[page] = (char)sum;
                page = (page + 4096) % mem_bytes;
            }
        }
        done = base + (clock() - start);
        double fraction = done < seconds ? done / seconds : 1.0;
        if (flog != NULL) {
            // Logged and flushed before the API can send it.
            fprintf(flog, "%e\n", fraction);
            fflush(flog);
        }
        boinc_fraction_done(fraction);
        if (boinc_time_to_checkpoint()) {
            if (write_checkpoint(done, sum) != 0) {
                fprintf(stderr, "apiapp: checkpoint failed\n");
            }
            boinc_checkpoint_completed();
        }
    }

    std::string out_path;
    boinc_resolve_filename_s("out", out_path);
    FILE* out = boinc_fopen(out_path.c_str(), "w");
    if (out == NULL) {
        fprintf(stderr, "apiapp: cannot write output %s: %s\n", out_path.c_str(), strerror(errno));
        boinc_finish(1);
    }
    fprintf(out, "apiapp output\ninput bytes: %ld\ninput fnv: %016llx\nseconds: %.0f\n",
            in_bytes, input_sum, seconds);
    if (fclose(out) != 0) {
        fprintf(stderr, "apiapp: cannot close output: %s\n", strerror(errno));
        boinc_finish(1);
    }
    free(mem);
    fprintf(stderr, "apiapp: done\n");
    boinc_fraction_done(1.0);
    boinc_finish(0);
    return 0; // not reached: boinc_finish exits
}
