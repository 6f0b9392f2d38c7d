CREATE TABLE `accounts` (
	`id` text PRIMARY KEY NOT NULL,
	`email` text NOT NULL,
	`plan` text DEFAULT 'payg' NOT NULL,
	`plan_credits` integer DEFAULT 0 NOT NULL,
	`purchased_credits` integer DEFAULT 0 NOT NULL,
	`plan_period_end` integer,
	`created_at` integer NOT NULL,
	CONSTRAINT "plan_credits_non_negative" CHECK("accounts"."plan_credits" >= 0),
	CONSTRAINT "purchased_credits_non_negative" CHECK("accounts"."purchased_credits" >= 0)
);
--> statement-breakpoint
CREATE UNIQUE INDEX `accounts_email_unique` ON `accounts` (`email`);--> statement-breakpoint
CREATE TABLE `api_keys` (
	`id` text PRIMARY KEY NOT NULL,
	`account_id` text NOT NULL,
	`key_hash` text NOT NULL,
	`display_prefix` text NOT NULL,
	`created_at` integer NOT NULL,
	`revoked_at` integer,
	FOREIGN KEY (`account_id`) REFERENCES `accounts`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE UNIQUE INDEX `api_keys_hash_unique` ON `api_keys` (`key_hash`);--> statement-breakpoint
CREATE INDEX `api_keys_account` ON `api_keys` (`account_id`);--> statement-breakpoint
CREATE TABLE `cloned_voices` (
	`account_id` text PRIMARY KEY NOT NULL,
	`object_key` text NOT NULL,
	`status` text NOT NULL,
	`profile` text,
	`created_at` integer NOT NULL,
	FOREIGN KEY (`account_id`) REFERENCES `accounts`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE TABLE `idempotency_keys` (
	`account_id` text NOT NULL,
	`key` text NOT NULL,
	`request_hash` text NOT NULL,
	`job_id` text NOT NULL,
	`created_at` integer NOT NULL,
	PRIMARY KEY(`account_id`, `key`)
);
--> statement-breakpoint
CREATE TABLE `jobs` (
	`id` text PRIMARY KEY NOT NULL,
	`account_id` text NOT NULL,
	`key_id` text NOT NULL,
	`tool` text NOT NULL,
	`params` text NOT NULL,
	`input_upload_ids` text NOT NULL,
	`status` text NOT NULL,
	`cost` integer NOT NULL,
	`plan_debit` integer NOT NULL,
	`purchased_debit` integer NOT NULL,
	`balance_after` integer NOT NULL,
	`estimated_seconds` integer NOT NULL,
	`error` text,
	`result_key` text,
	`result_filename` text,
	`result_content_type` text,
	`download_id` text NOT NULL,
	`created_at` integer NOT NULL,
	`started_at` integer,
	`deadline_at` integer,
	`finished_at` integer,
	`expires_at` integer,
	FOREIGN KEY (`account_id`) REFERENCES `accounts`(`id`) ON UPDATE no action ON DELETE no action,
	CONSTRAINT "jobs_cost_non_negative" CHECK("jobs"."cost" >= 0)
);
--> statement-breakpoint
CREATE UNIQUE INDEX `jobs_download_unique` ON `jobs` (`download_id`);--> statement-breakpoint
CREATE INDEX `jobs_status` ON `jobs` (`status`);--> statement-breakpoint
CREATE INDEX `jobs_expires` ON `jobs` (`expires_at`);--> statement-breakpoint
CREATE TABLE `ledger` (
	`id` text PRIMARY KEY NOT NULL,
	`account_id` text NOT NULL,
	`kind` text NOT NULL,
	`amount` integer NOT NULL,
	`plan_delta` integer NOT NULL,
	`purchased_delta` integer NOT NULL,
	`job_id` text,
	`idempotency_key` text NOT NULL,
	`reason` text,
	`created_at` integer NOT NULL,
	FOREIGN KEY (`account_id`) REFERENCES `accounts`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE UNIQUE INDEX `ledger_idempotency_unique` ON `ledger` (`idempotency_key`);--> statement-breakpoint
CREATE INDEX `ledger_account` ON `ledger` (`account_id`);--> statement-breakpoint
CREATE TABLE `uploads` (
	`id` text PRIMARY KEY NOT NULL,
	`account_id` text NOT NULL,
	`object_key` text NOT NULL,
	`filename` text NOT NULL,
	`kind` text NOT NULL,
	`container` text NOT NULL,
	`mime_type` text NOT NULL,
	`size_bytes` integer NOT NULL,
	`duration_ms` integer NOT NULL,
	`probe` text NOT NULL,
	`created_at` integer NOT NULL,
	`expires_at` integer NOT NULL,
	FOREIGN KEY (`account_id`) REFERENCES `accounts`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE INDEX `uploads_account` ON `uploads` (`account_id`);--> statement-breakpoint
CREATE INDEX `uploads_expires` ON `uploads` (`expires_at`);