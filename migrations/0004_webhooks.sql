-- Job webhooks (issue 10, item 4): a default URL and a secret version per account (the secret
-- itself is derived from the WEBHOOK_SIGNING_KEY Worker secret, never stored), the URL a job
-- notifies, one delivery per job and terminal event (the outbox row is written in the same
-- batch as the terminal state) and one log row per attempt.
ALTER TABLE `accounts` ADD `webhook_url` text;
--> statement-breakpoint
ALTER TABLE `accounts` ADD `webhook_secret_version` integer DEFAULT 1 NOT NULL;
--> statement-breakpoint
ALTER TABLE `accounts` ADD `webhook_secret_rotated_at` integer;
--> statement-breakpoint
ALTER TABLE `jobs` ADD `webhook_url` text;
--> statement-breakpoint
CREATE TABLE `job_webhooks` (
	`id` text PRIMARY KEY NOT NULL,
	`job_id` text NOT NULL,
	`account_id` text NOT NULL,
	`event` text NOT NULL,
	`url` text NOT NULL,
	`status` text DEFAULT 'pending' NOT NULL,
	`payload` text,
	`attempts` integer DEFAULT 0 NOT NULL,
	`token` text,
	`lease_until` integer,
	`next_attempt_at` integer NOT NULL,
	`created_at` integer NOT NULL,
	`finished_at` integer
);
--> statement-breakpoint
CREATE UNIQUE INDEX `job_webhooks_once` ON `job_webhooks` (`job_id`,`event`);
--> statement-breakpoint
CREATE INDEX `job_webhooks_pending` ON `job_webhooks` (`status`,`next_attempt_at`);
--> statement-breakpoint
CREATE TABLE `job_webhook_attempts` (
	`delivery_id` text NOT NULL,
	`attempt` integer NOT NULL,
	`started_at` integer NOT NULL,
	`duration_ms` integer NOT NULL,
	`response_status` integer,
	`error` text,
	PRIMARY KEY(`delivery_id`, `attempt`)
);
