# Sockets' checkpoint-kill-restart cases (Unix, TCP, UDP, Unix datagram),
# included by tests/CMakeLists.txt (which defines stasis_test_target, stasis_ckpt_test,
# stasis_plain_test and the tools they use).
# tcp_peer: the two ends of one TCP connection on two hosts (tests/multihost/ runs it).
foreach(t socketpair_tree stream_server datagram_peers tcp_peer uevent_monitor)
  stasis_test_target(${t} ${CMAKE_CURRENT_LIST_DIR}/tests/${t}.c)
endforeach()
# Unix socketpairs: bytes queued in both directions, in one process and between two
stasis_ckpt_test(ckpt.socketpair.one_process ARGS --wait-lines 10 PROGRAM self_echo socket 40 50)
stasis_ckpt_test(ckpt.socketpair.dgram.one_process ARGS --wait-lines 10 PROGRAM self_echo dgram 40 50)
stasis_ckpt_test(ckpt.socketpair.tree ARGS --wait-lines 10 PROGRAM socketpair_tree 60 40)
stasis_ckpt_test(ckpt.socketpair.tree.chain3 TIMEOUT 200 ARGS --chain 3 --between-lines 8
                 PROGRAM socketpair_tree 70 40)
# a server, a streaming client (bytes queued both ways) and new clients every 10 steps
stasis_ckpt_test(ckpt.unix.listener ARGS --wait-lines 12 PROGRAM stream_server unix 60 40)
stasis_ckpt_test(ckpt.unix.listener.chain2 TIMEOUT 200 ARGS --chain 2 --between-lines 12
                 PROGRAM stream_server unix 70 40)
stasis_ckpt_test(ckpt.tcp.ipv4 ARGS --wait-lines 12 PROGRAM stream_server tcp4 60 40)
stasis_ckpt_test(ckpt.tcp.ipv4.chain3 TIMEOUT 200 ARGS --chain 3 --between-lines 10
                 PROGRAM stream_server tcp4 70 40)
stasis_ckpt_test(ckpt.tcp.ipv6 ARGS --wait-lines 12 PROGRAM stream_server tcp6 60 40)
# Datagrams queued both ways between a server and two clients, each sent again from its sender
stasis_ckpt_test(ckpt.udp.ipv4 ARGS --wait-lines 3 PROGRAM datagram_peers udp4 60 30)
stasis_ckpt_test(ckpt.udp.ipv6.chain2 TIMEOUT 200 ARGS --chain 2 --between-lines 2 PROGRAM datagram_peers udp6 80 30)
stasis_ckpt_test(ckpt.unix.dgram_named ARGS --wait-lines 3 PROGRAM datagram_peers unix 60 30)
stasis_ckpt_test(ckpt.unix.dgram_abstract.chain2 TIMEOUT 200 ARGS --chain 2 --between-lines 2
                 PROGRAM datagram_peers abstract 80 30)
stasis_ckpt_test(ckpt.socketpair.dgram ARGS --wait-lines 10 PROGRAM socketpair_tree 60 40 dgram)
stasis_ckpt_test(ckpt.socketpair.seqpacket.chain2 TIMEOUT 200 ARGS --chain 2 --between-lines 10
                 PROGRAM socketpair_tree 60 40 seqpacket)
# A device-event netlink socket (libudev's monitor, SDL2's): groups, SO_PASSCRED and its socket
# filter as before, the filter still judging messages alike
stasis_ckpt_test(ckpt.netlink.uevent ARGS --wait-lines 10 PROGRAM uevent_monitor 40 40)
