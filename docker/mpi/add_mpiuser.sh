#!/bin/sh
# Image build step (run as root by docker/Dockerfile.*): the account the
# MPIJob's pods run as (securityContext runAsUser/runAsGroup 1000) and the
# file sshd needs when it runs as that user.
#
# mpiuser has uid and gid 1000 and home /home/mpiuser, where the MPI
# Operator mounts the job's key pair (sshAuthMountPath /home/mpiuser/.ssh).
# Ubuntu 24.04 images (nvidia/cuda, and vendor images built on them) already
# have an account with uid 1000 ("ubuntu"): it is renamed to mpiuser, so the
# uid stays the one the manifests name.
set -eu
uid=1000
existing="$(getent passwd "$uid" | cut -d: -f1)" || existing=""
if [ -z "$existing" ]; then
  if ! getent group "$uid" >/dev/null; then
    groupadd --gid "$uid" mpiuser
  fi
  useradd --uid "$uid" --gid "$uid" --create-home --shell /bin/bash mpiuser
elif [ "$existing" != mpiuser ]; then
  usermod --login mpiuser --home /home/mpiuser --move-home "$existing"
  group="$(getent group "$uid" | cut -d: -f1)" || group=""
  if [ -n "$group" ] && [ "$group" != mpiuser ]; then
    groupmod --new-name mpiuser "$group"
  fi
fi
# sshd's privilege separation folder, used only when sshd runs as root.
mkdir -p /run/sshd
