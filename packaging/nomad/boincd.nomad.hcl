# boincd on Nomad: a system job, so every eligible client node runs one
# boincd that donates its idle CPU (and optionally GPUs) to a BOINC project.
# See README.md for the client configuration this job needs (a host volume
# and max_kill_timeout) and for storing the account key.
#
#   nomad var put nomad/jobs/boincd account_key=YOUR_ACCOUNT_KEY
#
# To have every node follow an account manager (BAM!, Science United, a
# BoincHub) too, put its URL, user and password in the same variable:
#
#   nomad var put nomad/jobs/boincd account_key=KEY \
#     am_url=https://bam.boincstats.com/ am_user=NAME am_password=PASSWORD
#   nomad job run boincd.nomad.hcl

job "boincd" {
  type        = "system"
  datacenters = ["*"]
  # Low: volunteer computing yields to everything else the cluster runs.
  priority = 10

  update {
    # One node at a time: a restart makes tasks quit at a checkpoint.
    max_parallel     = 1
    min_healthy_time = "30s"
    healthy_deadline = "5m"
  }

  group "boincd" {
    restart {
      attempts = 3
      interval = "30m"
      delay    = "30s"
      mode     = "delay"
    }

    # The data directory must survive the allocation: it holds the client
    # state, the downloaded apps and the tasks in progress; losing it loses
    # every unfinished task and its credit. The client declares it:
    #   client { host_volume "boincd-data" { path = "/var/lib/boincd" } }
    volume "boincd-data" {
      type      = "host"
      source    = "boincd-data"
      read_only = false
    }

    task "boincd" {
      driver = "docker"
      # The image's non-root user (packaging/container/Dockerfile).
      user = "10001"

      # boincd asks tasks to quit at their next checkpoint on SIGTERM and
      # waits up to 60 s. Nomad caps kill_timeout at the client's
      # max_kill_timeout (default 30s): raise it to at least 90s.
      kill_signal  = "SIGTERM"
      kill_timeout = "90s"

      config {
        # Placeholder: the image built from packaging/container/Dockerfile.
        image = "ghcr.io/boincd/boincd:latest"
        # Appended to the entrypoint: boincd --dir /var/lib/boincd.
        args = ["--config", "/secrets/boincd.toml"]
        # tini as PID 1 reaps orphans of science apps that fork.
        init            = true
        readonly_rootfs = true
        cap_drop        = ["ALL"]
        security_opt    = ["no-new-privileges"]

        # Writable scratch for apps that use /tmp (the root is read-only).
        mount {
          type   = "tmpfs"
          target = "/tmp"
          tmpfs_options {
            size = 1073741824
          }
        }
      }

      volume_mount {
        volume      = "boincd-data"
        destination = "/var/lib/boincd"
        read_only   = false
      }

      # The config lives next to the key in the task's secrets/ directory
      # (/secrets in the container, never written to the host's disk), so
      # authenticator_file can be relative. Changes are applied with SIGHUP,
      # which makes boincd re-read the config and the key file.
      template {
        destination   = "secrets/boincd.toml"
        uid           = 10001
        gid           = 10001
        perms         = "0400"
        change_mode   = "signal"
        change_signal = "SIGHUP"
        data          = <<-EOT
          [log]
          level = "info"
          format = "json"

          [prefs]
          work_buf_min_days = 0.1
          work_buf_additional_days = 0.25
          max_ncpus_pct = 100

          # Optional Prometheus endpoint (then add a network port to the group):
          # [metrics]
          # enabled = true
          # address = "127.0.0.1:9464"

          [[project]]
          url = "https://einsteinathome.org/"
          authenticator_file = "account_key"
          resource_share = 100
          {{ with nomadVar "nomad/jobs/boincd" }}{{ if index . "am_url" }}
          # The account manager named in the Nomad Variable: the node
          # joins it and attaches the projects chosen on its web site.
          [account_manager]
          url = "{{ index . "am_url" }}"
          user = "{{ index . "am_user" }}"
          password_file = "am_password"
          {{ end }}{{ end }}
        EOT
      }

      # The account key, from the Nomad Variable only this job can read.
      template {
        destination   = "secrets/account_key"
        uid           = 10001
        gid           = 10001
        perms         = "0400"
        change_mode   = "signal"
        change_signal = "SIGHUP"
        data          = "{{ with nomadVar \"nomad/jobs/boincd\" }}{{ .account_key }}{{ end }}"
      }

      # The account manager password (empty without one); boincd keeps
      # only its hash.
      template {
        destination   = "secrets/am_password"
        uid           = 10001
        gid           = 10001
        perms         = "0400"
        change_mode   = "signal"
        change_signal = "SIGHUP"
        data          = "{{ with nomadVar \"nomad/jobs/boincd\" }}{{ index . \"am_password\" }}{{ end }}"
      }

      resources {
        # cpu is a share (weight), not a cap: boincd gets idle CPU and
        # yields it to busier tasks; its tasks also run at nice 19.
        cpu = 100
        # memory IS a hard limit with the docker driver and boincd sizes
        # work to the node's RAM, which it sees, not to this limit: keep it
        # generous, or enable memory oversubscription and set memory_max.
        memory = 4096
        # memory_max = 16384

        # Whole GPUs for BOINC (needs the nomad-device-nvidia plugin; the
        # NVIDIA toolkit then injects libnvidia-ml and libcuda):
        # device "nvidia/gpu" {
        #   count = 1
        # }
      }
    }
  }
}
