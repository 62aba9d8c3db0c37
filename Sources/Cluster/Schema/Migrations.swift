/// The schema's versions, oldest first: each is applied once, in its own transaction, by the
/// first daemon that starts with it (`Schema.migrate`). A version is never edited once released:
/// a change is a new version (tables altered, functions replaced with `CREATE OR REPLACE`).
///
/// Everything lives in the schema `photofinish`, so the database may hold other things too.
/// The work is done by functions on the server, so each operation on a task is one round trip
/// and one transaction, whatever it checks.
extension Schema {
    static let migrations: [Migration] = [
        Migration(version: 1, summary: "hosts, batches and photo tasks with leases", sql: version1),
        Migration(version: 2, summary: "the holders of open batches on the share; tasks no host can finish", sql: version2),
        Migration(version: 3, summary: "who took each claimer role and when; batches finished without the database; a dead host's tasks taken once its session is gone", sql: version3),
    ]

    /// When each hot folder's claimer role was taken, and by which session (`ClaimerRoles`):
    /// the role itself is the session's advisory lock, which says nothing of when it was taken.
    /// A batch its claimant finished while the database did not answer, told when it answers.
    /// And each host's own session, so that the tasks of a host killed are taken once its session
    /// has been gone a few seconds, not after their lease.
    private static let version3 = #"""
    CREATE TABLE photofinish.claimers (
        inbox text PRIMARY KEY,
        -- The role's advisory lock's second key as pg_locks.objid shows it (FNV-1a of the name).
        key   bigint NOT NULL,
        host  text NOT NULL,
        -- The holder's claimer session (as in batch_holders): the row says who holds the role
        -- only while that session holds the lock.
        pid   integer NOT NULL,
        app   text NOT NULL,
        since timestamptz NOT NULL DEFAULT now()
    );

    -- A batch its claimant finished and published alone (the database did not answer when its
    -- run began): published here too, its tasks not started withdrawn (no host takes them
    -- any more); those running complete as they end. Removed with the published batches.
    CREATE FUNCTION photofinish.finished_alone(p_inbox text, p_batch text) RETURNS integer
    LANGUAGE plpgsql AS $$
    DECLARE
        v_count integer;
    BEGIN
        PERFORM pg_advisory_xact_lock(photofinish.batch_key(p_inbox, p_batch));
        UPDATE photofinish.batches SET state = 'published', published = now(), closed = coalesce(closed, now())
         WHERE inbox = p_inbox AND batch = p_batch AND state <> 'published';
        DELETE FROM photofinish.tasks WHERE inbox = p_inbox AND batch = p_batch AND state IN ('ready', 'waiting');
        GET DIAGNOSTICS v_count = ROW_COUNT;
        RETURN v_count;
    END $$;

    -- The host's command session (its backend's pid and application_name, in pg_stat_activity for
    -- every role), recorded at each of its connections before anything else; and since when a
    -- taker first found it gone (NULL: alive, or not looked at since).
    ALTER TABLE photofinish.hosts ADD COLUMN session_pid integer, ADD COLUMN session_app text,
                                  ADD COLUMN gone_since timestamptz;

    CREATE FUNCTION photofinish.host_session(p_name text, p_instance uuid) RETURNS void
    LANGUAGE sql AS $$
        UPDATE photofinish.hosts
           SET session_pid = pg_backend_pid(), session_app = current_setting('application_name'),
               gone_since = NULL, seen = now()
         WHERE name = p_name AND instance = p_instance
    $$;

    -- As in version 2, and a running task is taken too when its holder's session has been gone
    -- for p_gone (the host killed: its socket closed) — never within one lease of the server's
    -- own start, when every session is gone and the holders reconnect and renew first. Hosts
    -- whose session is gone are noted here (the first look), and cleared when it is back.
    DROP FUNCTION photofinish.take_tasks(text, uuid, text[], integer, interval);
    CREATE FUNCTION photofinish.take_tasks(p_host text, p_instance uuid, p_inboxes text[], p_limit integer,
                                           p_lease interval, p_gone interval)
    RETURNS TABLE (inbox text, batch text, photo integer, source text, detail jsonb, attempts integer,
                   token uuid)
    LANGUAGE plpgsql AS $$
    BEGIN
        UPDATE photofinish.hosts h
           SET gone_since = CASE WHEN h.gone_since IS NULL THEN now() END
         WHERE h.stopped IS NULL AND h.session_pid IS NOT NULL
           AND (h.gone_since IS NULL) = NOT EXISTS (SELECT 1 FROM pg_stat_activity a
                                                     WHERE a.pid = h.session_pid AND a.application_name = h.session_app);
        RETURN QUERY
        WITH picked AS (
            SELECT t.inbox, t.batch, t.photo FROM photofinish.tasks t
             WHERE t.inbox = ANY (p_inboxes)
               AND (t.state = 'ready'
                    OR (t.state = 'running' AND now() - pg_postmaster_start_time() >= p_lease
                        AND (t.lease_until < now()
                             OR EXISTS (SELECT 1 FROM photofinish.hosts h
                                         WHERE h.name = t.host AND h.instance = t.instance
                                           AND h.gone_since < now() - p_gone))))
             ORDER BY t.seq
             LIMIT p_limit
               FOR UPDATE SKIP LOCKED)
        UPDATE photofinish.tasks t
           SET state = 'running', host = p_host, instance = p_instance, token = gen_random_uuid(),
               lease_until = now() + p_lease, taken = now(), attempts = t.attempts + 1
          FROM picked
         WHERE t.inbox = picked.inbox AND t.batch = picked.batch AND t.photo = picked.photo
        RETURNING t.inbox, t.batch, t.photo, t.source, t.detail, greatest(t.attempts - 1 - t.refusals, 0), t.token;
    END $$;
    """#

    /// Which claimer session holds each open batch on the share (`ClaimerRoles`): when that
    /// session is gone from the server the folder's next claimer adopts the batch at once,
    /// instead of waiting out the share lock's lease.
    private static let version2 = #"""
    CREATE TABLE photofinish.batch_holders (
        inbox   text NOT NULL,
        batch   text NOT NULL,
        host    text NOT NULL,
        -- The holder's claimer session: its backend's pid and application_name (both visible
        -- in pg_stat_activity to every role). Gone from there: the holder's process is gone.
        pid     integer NOT NULL,
        app     text NOT NULL,
        -- The batch's lock file on the share as the holder wrote it (its host, boot and pid):
        -- adopted only while the share still says so.
        lock    text NOT NULL,
        -- Still filling; false once closed on the share (its run under way): such a batch of a
        -- holder gone is taken over by its lease, shortened (`ClaimerRoles.Holding.deadHolder`).
        open    boolean NOT NULL DEFAULT true,
        since   timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (inbox, batch)
    );

    -- Why the task's last holder could not finish it (its name unreadable there, its batch not
    -- to be opened there, not a photo): said in `cluster status` and kept with the task.
    ALTER TABLE photofinish.tasks ADD COLUMN refused text;
    -- How many of its starts ended in a refusal: the others that did not complete are the
    -- finisher stopping (a crash, a kill, a lease lost), what "stopped the finisher twice" counts.
    ALTER TABLE photofinish.tasks ADD COLUMN refusals integer NOT NULL DEFAULT 0;

    -- As in version 1, the earlier attempts returned counting only the starts that stopped the
    -- finisher (not refusals).
    CREATE OR REPLACE FUNCTION photofinish.take_tasks(p_host text, p_instance uuid, p_inboxes text[], p_limit integer,
                                                      p_lease interval)
    RETURNS TABLE (inbox text, batch text, photo integer, source text, detail jsonb, attempts integer,
                   token uuid)
    LANGUAGE sql AS $$
        WITH picked AS (
            SELECT t.inbox, t.batch, t.photo FROM photofinish.tasks t
             WHERE t.inbox = ANY (p_inboxes)
               AND (t.state = 'ready'
                    OR (t.state = 'running' AND t.lease_until < now()
                        AND now() - pg_postmaster_start_time() >= p_lease))
             ORDER BY t.seq
             LIMIT p_limit
               FOR UPDATE SKIP LOCKED)
        UPDATE photofinish.tasks t
           SET state = 'running', host = p_host, instance = p_instance, token = gen_random_uuid(),
               lease_until = now() + p_lease, taken = now(), attempts = t.attempts + 1
          FROM picked
         WHERE t.inbox = picked.inbox AND t.batch = picked.batch AND t.photo = picked.photo
        RETURNING t.inbox, t.batch, t.photo, t.source, t.detail, greatest(t.attempts - 1 - t.refusals, 0), t.token
    $$;

    -- A holder that cannot finish a photo task gives it back counted (another host may): ready
    -- again — or, once it has been started p_limit times, done, its photo left to the batch's
    -- run (its claimant finishes it from the manifest), the reason kept. So a task no host can
    -- take does not go round the hosts for ever and the batch is not held open by it. Returns
    -- 'again' or 'done' (with the batch's outputs' token when that was its last photo and the
    -- caller took them), or 'stale' (the token no longer holds it).
    CREATE FUNCTION photofinish.refuse_task(p_token uuid, p_reason text, p_limit integer, p_host text,
                                            p_instance uuid, p_lease interval, p_take boolean)
    RETURNS TABLE (outcome text, outputs_token uuid) LANGUAGE plpgsql AS $$
    DECLARE
        v_inbox text;
        v_attempts integer;
        v_done boolean;
        v_outputs uuid;
    BEGIN
        SELECT t.inbox, t.attempts INTO v_inbox, v_attempts FROM photofinish.tasks t
         WHERE t.token = p_token AND t.state = 'running' AND t.photo > 0;
        IF NOT FOUND THEN
            RETURN QUERY SELECT 'stale'::text, NULL::uuid;
            RETURN;
        END IF;
        UPDATE photofinish.tasks t SET refused = p_reason, refusals = t.refusals + 1 WHERE t.token = p_token;
        IF v_attempts < p_limit THEN
            UPDATE photofinish.tasks t
               SET state = 'ready', host = NULL, instance = NULL, token = NULL, lease_until = NULL
             WHERE t.token = p_token;
            PERFORM pg_notify('photofinish_tasks', v_inbox);
            RETURN QUERY SELECT 'again'::text, NULL::uuid;
            RETURN;
        END IF;
        SELECT c.completed, c.outputs_token INTO v_done, v_outputs
          FROM photofinish.complete_task(p_token, jsonb_build_object('refused', p_reason), p_host, p_instance,
                                         p_lease, p_take) c;
        RETURN QUERY SELECT CASE WHEN v_done THEN 'done' ELSE 'stale' END, v_outputs;
    END $$;
    """#

    private static let version1 = #"""
    CREATE TABLE photofinish.hosts (
        name      text PRIMARY KEY,
        -- Each start of a daemon is a new instance: what an earlier one held is known to be lost.
        instance  uuid NOT NULL,
        pid       integer NOT NULL,
        boot      text NOT NULL,
        version   text NOT NULL,
        workers   integer NOT NULL,
        -- The hot folders whose tasks this host takes now (its shares that answer).
        inboxes   text[] NOT NULL DEFAULT '{}',
        started   timestamptz NOT NULL DEFAULT now(),
        seen      timestamptz NOT NULL DEFAULT now(),
        stopped   timestamptz
    );

    CREATE TABLE photofinish.batches (
        inbox      text NOT NULL,
        batch      text NOT NULL,
        claimed_by text NOT NULL,
        claimed    timestamptz NOT NULL DEFAULT now(),
        -- open: photos are still being added; closed: none will be; published: in out/<id>/.
        state      text NOT NULL DEFAULT 'open' CHECK (state IN ('open', 'closed', 'published')),
        closed     timestamptz,
        published  timestamptz,
        PRIMARY KEY (inbox, batch)
    );

    CREATE TABLE photofinish.tasks (
        inbox       text NOT NULL,
        batch       text NOT NULL,
        -- 1, 2, …: a photo; 0: the batch's own outputs (story, colour card, report, publishing).
        photo       integer NOT NULL CHECK (photo >= 0),
        source      text NOT NULL,
        detail      jsonb,
        -- waiting (photo 0 until every photo is done), ready, running (under a lease), done.
        state       text NOT NULL CHECK (state IN ('waiting', 'ready', 'running', 'done')),
        -- Starts that ended without completing or giving the task back: crashes, kills, hosts
        -- lost. Two, and the photo is failed rather than tried again.
        attempts    integer NOT NULL DEFAULT 0,
        -- Who holds (running) or finished (done) it.
        host        text,
        instance    uuid,
        -- Checked on every write: a holder whose lease was taken over cannot complete.
        token       uuid,
        lease_until timestamptz,
        taken       timestamptz,
        finished    timestamptz,
        -- The photo's report item, recorded in the transaction that completes the task.
        item        jsonb,
        -- Oldest first: the order tasks are taken in.
        seq         bigserial,
        PRIMARY KEY (inbox, batch, photo),
        FOREIGN KEY (inbox, batch) REFERENCES photofinish.batches ON DELETE CASCADE
    );
    CREATE INDEX tasks_takeable ON photofinish.tasks (seq) WHERE state IN ('ready', 'running');
    CREATE INDEX tasks_token ON photofinish.tasks (token) WHERE token IS NOT NULL;
    CREATE INDEX tasks_held ON photofinish.tasks (host) WHERE state = 'running';

    -- The advisory lock of one batch: completions and the close of a batch take it, so exactly
    -- one of them sees the batch closed with every photo done and starts its own outputs.
    CREATE FUNCTION photofinish.batch_key(p_inbox text, p_batch text) RETURNS bigint
    LANGUAGE sql IMMUTABLE AS $$ SELECT hashtextextended(p_inbox || '/' || p_batch, 21) $$;

    -- With the batch's advisory lock held: when the batch is closed and every photo is done,
    -- its outputs (photo 0) become runnable — taken at once by the caller (p_take) or left ready
    -- for any host. Returns the token when the caller took it.
    CREATE FUNCTION photofinish.release_outputs(p_inbox text, p_batch text, p_host text, p_instance uuid,
                                                p_lease interval, p_take boolean) RETURNS uuid
    LANGUAGE plpgsql AS $$
    DECLARE
        v_token uuid;
    BEGIN
        IF NOT EXISTS (SELECT 1 FROM photofinish.batches
                       WHERE inbox = p_inbox AND batch = p_batch AND state = 'closed') THEN
            RETURN NULL;
        END IF;
        IF EXISTS (SELECT 1 FROM photofinish.tasks
                   WHERE inbox = p_inbox AND batch = p_batch AND photo > 0 AND state <> 'done') THEN
            RETURN NULL;
        END IF;
        IF p_take THEN
            UPDATE photofinish.tasks
               SET state = 'running', host = p_host, instance = p_instance, token = gen_random_uuid(),
                   lease_until = now() + p_lease, taken = now(), attempts = attempts + 1
             WHERE inbox = p_inbox AND batch = p_batch AND photo = 0 AND state = 'waiting'
            RETURNING token INTO v_token;
        ELSE
            UPDATE photofinish.tasks SET state = 'ready'
             WHERE inbox = p_inbox AND batch = p_batch AND photo = 0 AND state = 'waiting';
            IF FOUND THEN
                PERFORM pg_notify('photofinish_tasks', p_inbox);
            END IF;
        END IF;
        RETURN v_token;
    END $$;

    -- A claim: the batch (made open if new) and its photos as ready tasks, in one transaction.
    -- Photos already there are left as they are (a claim recorded again after a lost answer).
    CREATE FUNCTION photofinish.add_tasks(p_inbox text, p_batch text, p_host text, p_tasks jsonb)
    RETURNS integer LANGUAGE plpgsql AS $$
    DECLARE
        v_state text;
        v_added integer;
    BEGIN
        INSERT INTO photofinish.batches (inbox, batch, claimed_by) VALUES (p_inbox, p_batch, p_host)
        ON CONFLICT (inbox, batch) DO NOTHING;
        SELECT state INTO v_state FROM photofinish.batches WHERE inbox = p_inbox AND batch = p_batch FOR SHARE;
        IF v_state <> 'open' THEN
            RAISE EXCEPTION 'batch % of % is %: no photo can be added to it', p_batch, p_inbox, v_state
                USING ERRCODE = 'PF001';
        END IF;
        INSERT INTO photofinish.tasks (inbox, batch, photo, source, detail, state)
        SELECT p_inbox, p_batch, (t ->> 'photo')::integer, t ->> 'source', (t ->> 'detail')::jsonb, 'ready'
          FROM jsonb_array_elements(p_tasks) AS t
        ON CONFLICT (inbox, batch, photo) DO NOTHING;
        GET DIAGNOSTICS v_added = ROW_COUNT;
        IF v_added > 0 THEN
            PERFORM pg_notify('photofinish_tasks', p_inbox);
        END IF;
        RETURN v_added;
    END $$;

    -- No photo will be added: the batch's outputs wait for its photos (or start now).
    CREATE FUNCTION photofinish.close_batch(p_inbox text, p_batch text, p_host text, p_instance uuid,
                                            p_lease interval, p_take boolean) RETURNS uuid
    LANGUAGE plpgsql AS $$
    BEGIN
        PERFORM pg_advisory_xact_lock(photofinish.batch_key(p_inbox, p_batch));
        UPDATE photofinish.batches SET state = 'closed', closed = now()
         WHERE inbox = p_inbox AND batch = p_batch AND state = 'open';
        IF NOT FOUND THEN
            IF NOT EXISTS (SELECT 1 FROM photofinish.batches WHERE inbox = p_inbox AND batch = p_batch) THEN
                RAISE EXCEPTION 'batch % of % is not in the database', p_batch, p_inbox USING ERRCODE = 'PF002';
            END IF;
            RETURN NULL;  -- closed before: nothing to do again
        END IF;
        INSERT INTO photofinish.tasks (inbox, batch, photo, source, state)
        VALUES (p_inbox, p_batch, 0, '', 'waiting')
        ON CONFLICT (inbox, batch, photo) DO NOTHING;
        RETURN photofinish.release_outputs(p_inbox, p_batch, p_host, p_instance, p_lease, p_take);
    END $$;

    -- Up to p_limit tasks of the given hot folders, oldest first: ready ones, and running ones
    -- whose lease has expired — but never within one lease of the server's own start, so the
    -- hosts that held leases when it stopped can renew them first. Locked rows are skipped, so
    -- takers never wait for each other nor take one task twice.
    CREATE FUNCTION photofinish.take_tasks(p_host text, p_instance uuid, p_inboxes text[], p_limit integer,
                                           p_lease interval)
    RETURNS TABLE (inbox text, batch text, photo integer, source text, detail jsonb, attempts integer,
                   token uuid)
    LANGUAGE sql AS $$
        WITH picked AS (
            SELECT t.inbox, t.batch, t.photo FROM photofinish.tasks t
             WHERE t.inbox = ANY (p_inboxes)
               AND (t.state = 'ready'
                    OR (t.state = 'running' AND t.lease_until < now()
                        AND now() - pg_postmaster_start_time() >= p_lease))
             ORDER BY t.seq
             LIMIT p_limit
               FOR UPDATE SKIP LOCKED)
        UPDATE photofinish.tasks t
           SET state = 'running', host = p_host, instance = p_instance, token = gen_random_uuid(),
               lease_until = now() + p_lease, taken = now(), attempts = t.attempts + 1
          FROM picked
         WHERE t.inbox = picked.inbox AND t.batch = picked.batch AND t.photo = picked.photo
        RETURNING t.inbox, t.batch, t.photo, t.source, t.detail, t.attempts - 1, t.token
    $$;

    -- The holder's heartbeat: its leases renewed (those it still holds come back), its folders.
    CREATE FUNCTION photofinish.renew_leases(p_host text, p_instance uuid, p_tokens uuid[], p_lease interval,
                                             p_inboxes text[])
    RETURNS TABLE (token uuid) LANGUAGE plpgsql AS $$
    BEGIN
        UPDATE photofinish.hosts SET seen = now(), inboxes = p_inboxes
         WHERE name = p_host AND instance = p_instance;
        RETURN QUERY
        UPDATE photofinish.tasks t SET lease_until = now() + p_lease
         WHERE t.token = ANY (p_tokens) AND t.state = 'running'
        RETURNING t.token;
    END $$;

    -- A reconnect: tasks this instance holds that it does not know of (a take whose answer was
    -- lost with the connection) go back, not counted as attempts.
    CREATE FUNCTION photofinish.release_unknown(p_host text, p_instance uuid, p_known uuid[])
    RETURNS integer LANGUAGE plpgsql AS $$
    DECLARE
        v_tokens uuid[];
    BEGIN
        SELECT coalesce(array_agg(t.token), '{}') INTO v_tokens FROM photofinish.tasks t
         WHERE t.host = p_host AND t.instance = p_instance AND t.state = 'running'
           AND NOT (t.token = ANY (p_known));
        RETURN photofinish.give_back(v_tokens);
    END $$;

    -- The holder gives tasks back (a stop, a share gone): ready again, the start not counted.
    CREATE FUNCTION photofinish.give_back(p_tokens uuid[]) RETURNS integer
    LANGUAGE plpgsql AS $$
    DECLARE
        v_count integer;
        v_inbox text;
    BEGIN
        v_count := 0;
        FOR v_inbox IN
            UPDATE photofinish.tasks t
               SET state = 'ready', host = NULL, instance = NULL, token = NULL, lease_until = NULL,
                   attempts = greatest(t.attempts - 1, 0)
             WHERE t.token = ANY (p_tokens) AND t.state = 'running'
            RETURNING t.inbox
        LOOP
            v_count := v_count + 1;
            PERFORM pg_notify('photofinish_tasks', v_inbox);
        END LOOP;
        RETURN v_count;
    END $$;

    -- A task done: its report item recorded, if the token still holds it. Completing photo 0
    -- publishes the batch; completing the last photo of a closed batch releases photo 0 (taken
    -- by the caller when p_take). Completing twice with one token (an answer lost on the way)
    -- is a success the second time too.
    CREATE FUNCTION photofinish.complete_task(p_token uuid, p_item jsonb, p_host text, p_instance uuid,
                                              p_lease interval, p_take boolean)
    RETURNS TABLE (completed boolean, outputs_token uuid) LANGUAGE plpgsql AS $$
    DECLARE
        v_inbox text;
        v_batch text;
        v_photo integer;
    BEGIN
        SELECT t.inbox, t.batch, t.photo INTO v_inbox, v_batch, v_photo
          FROM photofinish.tasks t WHERE t.token = p_token;
        IF NOT FOUND THEN
            RETURN QUERY SELECT false, NULL::uuid;
            RETURN;
        END IF;
        PERFORM pg_advisory_xact_lock(photofinish.batch_key(v_inbox, v_batch));
        UPDATE photofinish.tasks t SET state = 'done', item = p_item, finished = now(), lease_until = NULL
         WHERE t.token = p_token AND t.state = 'running';
        IF NOT FOUND THEN
            RETURN QUERY SELECT EXISTS (SELECT 1 FROM photofinish.tasks t WHERE t.token = p_token AND t.state = 'done'),
                                NULL::uuid;
            RETURN;
        END IF;
        IF v_photo = 0 THEN
            UPDATE photofinish.batches SET state = 'published', published = now()
             WHERE inbox = v_inbox AND batch = v_batch;
            RETURN QUERY SELECT true, NULL::uuid;
            RETURN;
        END IF;
        RETURN QUERY SELECT true, photofinish.release_outputs(v_inbox, v_batch, p_host, p_instance, p_lease, p_take);
    END $$;

    -- A daemon starts: its row (re)made for this instance; what an earlier instance of the same
    -- host held is ready again at once (it stopped without giving it back: counted). Returns the
    -- earlier instance as it was, so the daemon can warn when it looks alive.
    CREATE FUNCTION photofinish.register_host(p_name text, p_instance uuid, p_pid integer, p_boot text,
                                              p_version text, p_workers integer, p_inboxes text[])
    RETURNS TABLE (previous_instance uuid, previous_pid integer, previous_boot text, previous_seen double precision,
                   previous_stopped boolean, released integer)
    LANGUAGE plpgsql AS $$
    DECLARE
        v_old photofinish.hosts%ROWTYPE;
        v_released integer := 0;
        v_inbox text;
    BEGIN
        SELECT * INTO v_old FROM photofinish.hosts WHERE name = p_name FOR UPDATE;
        INSERT INTO photofinish.hosts (name, instance, pid, boot, version, workers, inboxes)
        VALUES (p_name, p_instance, p_pid, p_boot, p_version, p_workers, p_inboxes)
        ON CONFLICT (name) DO UPDATE
           SET instance = excluded.instance, pid = excluded.pid, boot = excluded.boot, version = excluded.version,
               workers = excluded.workers, inboxes = excluded.inboxes, started = now(), seen = now(), stopped = NULL;
        FOR v_inbox IN
            UPDATE photofinish.tasks t
               SET state = 'ready', host = NULL, instance = NULL, token = NULL, lease_until = NULL
             WHERE t.host = p_name AND t.state = 'running' AND t.instance IS DISTINCT FROM p_instance
            RETURNING t.inbox
        LOOP
            v_released := v_released + 1;
            PERFORM pg_notify('photofinish_tasks', v_inbox);
        END LOOP;
        RETURN QUERY SELECT v_old.instance, v_old.pid, v_old.boot,
                            extract(epoch FROM now() - v_old.seen)::double precision,
                            v_old.stopped IS NOT NULL, v_released;
    END $$;

    -- A daemon stops cleanly: what it holds goes back (not counted), and it is marked stopped.
    CREATE FUNCTION photofinish.stop_host(p_name text, p_instance uuid) RETURNS integer
    LANGUAGE plpgsql AS $$
    DECLARE
        v_tokens uuid[];
    BEGIN
        SELECT coalesce(array_agg(token), '{}') INTO v_tokens FROM photofinish.tasks
         WHERE host = p_name AND instance = p_instance AND state = 'running';
        UPDATE photofinish.hosts SET stopped = now(), seen = now(), inboxes = '{}'
         WHERE name = p_name AND instance = p_instance;
        RETURN photofinish.give_back(v_tokens);
    END $$;
    """#
}
