#!/bin/busybox sh
# nodeconf reference VM initramfs: load the boot modules, wait for root=, switch_root to init=.
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
while read -r module; do
    insmod "$module" 2>/dev/null
done </modules.order
root=/dev/vda
init=/sbin/init
for arg in $(cat /proc/cmdline); do
    case "$arg" in
        root=*) root="${arg#root=}" ;;
        init=*) init="${arg#init=}" ;;
    esac
done
tries=0
until [ -b "$root" ]; do
    tries=$((tries + 1))
    if [ "$tries" -gt 500 ]; then
        echo "initramfs: root device $root did not appear" >/dev/console
        exec sh
    fi
    sleep 0.02
done
mkdir -p /newroot
mount -t ext4 -o rw "$root" /newroot || { echo "initramfs: cannot mount $root" >/dev/console; exec sh; }
mount --move /dev /newroot/dev
umount /sys /proc
exec switch_root /newroot "$init"
