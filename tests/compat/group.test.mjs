// Groups and group chat through the official Nakama JavaScript client: every answer is
// Nakama's (server/api_group.go, server/core_group.go).
import { test } from "node:test";
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import WebSocket from "ws";
import { client, freshDeviceId, assertRejects, recordEvents } from "./support.mjs";

// Node has no global WebSocket; nakama-js expects the browser API, which `ws` provides.
globalThis.WebSocket = WebSocket;

async function player() {
  const c = client();
  const session = await c.authenticateDevice(freshDeviceId(), true);
  return { client: c, session, id: session.user_id, name: session.username };
}

const unique = (prefix) => `${prefix}-${randomUUID().slice(0, 8)}`;

test("create answers the group; a taken name is 409/6", async () => {
  const ada = await player();
  const name = unique("Knights");
  const group = await ada.client.createGroup(ada.session, { name, description: "d", lang_tag: "fr", open: true, max_count: 10 });
  assert.match(group.id, /^[0-9a-f-]{36}$/);
  assert.equal(group.name, name);
  assert.equal(group.creator_id, ada.id);
  assert.equal(group.lang_tag, "fr");
  assert.equal(group.open, true);
  assert.equal(group.edge_count, 1);
  assert.equal(group.max_count, 10);
  await assertRejects(ada.client.createGroup(ada.session, { name }), 409, 6, "Group name is in use.");
  await assertRejects(ada.client.createGroup(ada.session, { name: "" }), 400, 3, "Group name must be set.");
});

test("list by name prefix, then join an open group at once", async () => {
  const ada = await player();
  const bob = await player();
  const name = unique("Open");
  const group = await ada.client.createGroup(ada.session, { name, open: true });
  const found = await bob.client.listGroups(bob.session, `${name.slice(0, 9)}%`, undefined, 10);
  assert.ok(found.groups.some((g) => g.id === group.id));
  assert.equal(await bob.client.joinGroup(bob.session, group.id), true);
  const users = await ada.client.listGroupUsers(ada.session, group.id);
  const states = Object.fromEntries(users.group_users.map((u) => [u.user.id, u.state]));
  assert.deepEqual(states, { [ada.id]: 0, [bob.id]: 2 });
  const mine = await bob.client.listUserGroups(bob.session, bob.id);
  assert.equal(mine.user_groups.length, 1);
  assert.equal(mine.user_groups[0].group.id, group.id);
  assert.equal(mine.user_groups[0].state, 2);
});

test("closed group: a join request, accepted by add", async () => {
  const ada = await player();
  const bob = await player();
  const group = await ada.client.createGroup(ada.session, { name: unique("Closed"), open: false });
  await bob.client.joinGroup(bob.session, group.id);
  let users = await ada.client.listGroupUsers(ada.session, group.id, 3);
  assert.deepEqual(users.group_users.map((u) => u.user.id), [bob.id]);
  await assertRejects(bob.client.addGroupUsers(bob.session, group.id, [bob.id]), 404, 5, "Group not found or permission denied.");
  await ada.client.addGroupUsers(ada.session, group.id, [bob.id]);
  users = await ada.client.listGroupUsers(ada.session, group.id, 2);
  assert.deepEqual(users.group_users.map((u) => u.user.id), [bob.id]);
  const [info] = (await ada.client.listUserGroups(ada.session, ada.id)).user_groups;
  assert.equal(info.group.edge_count, 2);
});

test("promote, demote, kick and ban follow the ranks", async () => {
  const ada = await player();
  const bob = await player();
  const cy = await player();
  const group = await ada.client.createGroup(ada.session, { name: unique("Ranks"), open: true, max_count: 3 });
  await bob.client.joinGroup(bob.session, group.id);
  await cy.client.joinGroup(cy.session, group.id);
  const extra = await player();
  await assertRejects(extra.client.joinGroup(extra.session, group.id), 400, 3, "Group is full.");
  await assertRejects(bob.client.kickGroupUsers(bob.session, group.id, [cy.id]), 404, 5, "Group not found or permission denied.");
  await ada.client.promoteGroupUsers(ada.session, group.id, [bob.id]);
  // An admin cannot touch the superadmin, but kicks members.
  await bob.client.kickGroupUsers(bob.session, group.id, [ada.id]);
  await bob.client.banGroupUsers(bob.session, group.id, [cy.id]);
  const state = async (id) =>
    (await ada.client.listGroupUsers(ada.session, group.id)).group_users.find((u) => u.user.id === id)?.state;
  assert.equal(await state(ada.id), 0);
  assert.equal(await state(bob.id), 1);
  assert.equal(await state(cy.id), undefined, "banned users are listed only by state 4");
  const banned = await ada.client.listGroupUsers(ada.session, group.id, 4);
  assert.deepEqual(banned.group_users.map((u) => u.user.id), [cy.id]);
  // A banned user's join changes nothing.
  await cy.client.joinGroup(cy.session, group.id);
  assert.equal((await ada.client.listGroupUsers(ada.session, group.id, 4)).group_users.length, 1);
  await ada.client.demoteGroupUsers(ada.session, group.id, [bob.id]);
  assert.equal(await state(bob.id), 2);
});

test("leave: the last superadmin stays; members go", async () => {
  const ada = await player();
  const bob = await player();
  const group = await ada.client.createGroup(ada.session, { name: unique("Leave"), open: true });
  await bob.client.joinGroup(bob.session, group.id);
  await assertRejects(ada.client.leaveGroup(ada.session, group.id), 400, 3, "Cannot leave group when you are the last superadmin.");
  assert.equal(await bob.client.leaveGroup(bob.session, group.id), true);
  const users = await ada.client.listGroupUsers(ada.session, group.id);
  assert.equal(users.group_users.length, 1);
  await assertRejects(bob.client.deleteGroup(bob.session, group.id), 400, 3, "Group not found or you're not allowed to delete.");
  await ada.client.deleteGroup(ada.session, group.id);
  await assertRejects(bob.client.joinGroup(bob.session, group.id), 404, 5, "Group not found.");
});

test("group chat: members join the group channel and chat; others are refused", async () => {
  const ada = await player();
  const bob = await player();
  const eve = await player();
  const group = await ada.client.createGroup(ada.session, { name: unique("Chat"), open: true });
  await bob.client.joinGroup(bob.session, group.id);
  const sockets = [];
  const connect = async (p) => {
    const socket = p.client.createSocket(false, false);
    await socket.connect(p.session, false);
    sockets.push(socket);
    return socket;
  };
  try {
    const adaSocket = await connect(ada);
    const bobSocket = await connect(bob);
    const eveSocket = await connect(eve);
    const channel = await adaSocket.joinChat(group.id, 3, true, false);
    assert.equal(channel.id, `3.${group.id}..`);
    assert.equal(channel.group_id, group.id);
    const got = new Promise((resolve) => {
      adaSocket.onchannelmessage = (m) => {
        if (m.sender_id === bob.id) resolve(m);
      };
    });
    await bobSocket.joinChat(group.id, 3, true, false);
    const ack = await bobSocket.writeChatMessage(channel.id, { text: "hi group" });
    const message = await got;
    assert.equal(message.message_id, ack.message_id);
    assert.deepEqual(message.content, { text: "hi group" });
    await assert.rejects(eveSocket.joinChat(group.id, 3, true, false), (error) => error.code === 3);
  } finally {
    for (const socket of sockets) socket.disconnect(false);
  }
});

test("group chat: membership changes are system messages (codes 3-9); removed users leave the channel", async () => {
  const ada = await player();
  const bob = await player();
  const cy = await player();
  const dee = await player();
  const group = await ada.client.createGroup(ada.session, { name: unique("Sys"), open: true });
  const sockets = [];
  const connect = async (p) => {
    const socket = p.client.createSocket(false, false);
    const events = recordEvents(socket, ["onchannelmessage", "onchannelpresence"]);
    await socket.connect(p.session, false);
    sockets.push(socket);
    return { socket, events };
  };
  try {
    const adaLive = await connect(ada);
    const channel = await adaLive.socket.joinChat(group.id, 3, true, false);
    // Every message names the affected user as its sender, with an empty content object
    // (server/core_group.go).
    const system = async (code, who) => {
      const m = await adaLive.events.next("onchannelmessage", (m) => m.code === code && m.sender_id === who.id);
      assert.equal(m.username, who.name);
      assert.deepEqual(m.content, {});
      assert.equal(m.persistent, true);
      assert.equal(m.channel_id, channel.id);
      assert.equal(m.group_id, group.id);
      return m;
    };
    await bob.client.joinGroup(bob.session, group.id);
    await system(3, bob);
    await ada.client.addGroupUsers(ada.session, group.id, [cy.id]);
    await system(4, cy);
    await ada.client.promoteGroupUsers(ada.session, group.id, [bob.id]);
    await system(7, bob);
    await ada.client.demoteGroupUsers(ada.session, group.id, [bob.id]);
    await system(9, bob);

    // Bob is in the channel when kicked: he gets the message, then is taken out of it.
    const bobLive = await connect(bob);
    await bobLive.socket.joinChat(group.id, 3, true, false);
    await ada.client.kickGroupUsers(ada.session, group.id, [bob.id]);
    await system(6, bob);
    await bobLive.events.next("onchannelmessage", (m) => m.code === 6);
    await adaLive.events.next("onchannelpresence", (e) => e.leaves?.some((l) => l.user_id === bob.id));
    await assert.rejects(bobLive.socket.writeChatMessage(channel.id, { after: "kick" }), (error) => error.code === 3);

    const cyLive = await connect(cy);
    await cyLive.socket.joinChat(group.id, 3, true, false);
    await ada.client.banGroupUsers(ada.session, group.id, [cy.id]);
    await system(8, cy);
    await adaLive.events.next("onchannelpresence", (e) => e.leaves?.some((l) => l.user_id === cy.id));
    await assert.rejects(cyLive.socket.writeChatMessage(channel.id, { after: "ban" }), (error) => error.code === 3);

    await dee.client.joinGroup(dee.session, group.id);
    await system(3, dee);
    const deeLive = await connect(dee);
    await deeLive.socket.joinChat(group.id, 3, true, false);
    await dee.client.leaveGroup(dee.session, group.id);
    await system(5, dee);
    await adaLive.events.next("onchannelpresence", (e) => e.leaves?.some((l) => l.user_id === dee.id));

    // They are the channel's history. Nakama stamps messages in whole seconds and orders the
    // history by that time, then by message id (random), so messages of one second come in any
    // order there: compare them as a set.
    const history = await ada.client.listChannelMessages(ada.session, channel.id, 100, true);
    const key = ([code, sender]) => `${code}:${sender}`;
    assert.deepEqual(
      history.messages.map((m) => key([m.code, m.sender_id])).sort(),
      [[3, bob.id], [4, cy.id], [7, bob.id], [9, bob.id], [6, bob.id], [8, cy.id], [3, dee.id], [5, dee.id]].map(key).sort(),
    );
  } finally {
    for (const socket of sockets) socket.disconnect(false);
  }
});
