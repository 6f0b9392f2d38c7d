CREATE TABLE `approval_links` (
	`id` text PRIMARY KEY NOT NULL,
	`post_id` text NOT NULL,
	`token_hash` text NOT NULL,
	`expires_at` integer NOT NULL,
	`revoked_at` integer,
	`created_at` integer NOT NULL,
	FOREIGN KEY (`post_id`) REFERENCES `posts`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE UNIQUE INDEX `approval_links_token` ON `approval_links` (`token_hash`);--> statement-breakpoint
CREATE INDEX `approval_links_post` ON `approval_links` (`post_id`);--> statement-breakpoint
CREATE TABLE `brand_channels` (
	`id` text PRIMARY KEY NOT NULL,
	`brand_id` text NOT NULL,
	`network` text NOT NULL,
	`config` text NOT NULL,
	`created_at` integer NOT NULL,
	FOREIGN KEY (`brand_id`) REFERENCES `brands`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE UNIQUE INDEX `brand_channels_network` ON `brand_channels` (`brand_id`,`network`);--> statement-breakpoint
CREATE TABLE `brands` (
	`id` text PRIMARY KEY NOT NULL,
	`account_id` text NOT NULL,
	`name` text NOT NULL,
	`time_zone` text NOT NULL,
	`requires_approval` integer DEFAULT false NOT NULL,
	`webhook_url` text,
	`webhook_secret` text NOT NULL,
	`created_at` integer NOT NULL,
	FOREIGN KEY (`account_id`) REFERENCES `accounts`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE INDEX `brands_account` ON `brands` (`account_id`);--> statement-breakpoint
CREATE TABLE `post_deliveries` (
	`id` text PRIMARY KEY NOT NULL,
	`post_id` text NOT NULL,
	`network` text NOT NULL,
	`status` text NOT NULL,
	`claimed_at` integer,
	`external_id` text,
	`external_url` text,
	`attempts` integer DEFAULT 0 NOT NULL,
	`last_error` text,
	`delivered_at` integer,
	`views` integer DEFAULT 0 NOT NULL,
	`likes` integer DEFAULT 0 NOT NULL,
	`comments` integer DEFAULT 0 NOT NULL,
	`shares` integer DEFAULT 0 NOT NULL,
	`stats_updated_at` integer,
	FOREIGN KEY (`post_id`) REFERENCES `posts`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE UNIQUE INDEX `post_deliveries_once` ON `post_deliveries` (`post_id`,`network`);--> statement-breakpoint
CREATE TABLE `post_reviews` (
	`id` text PRIMARY KEY NOT NULL,
	`post_id` text NOT NULL,
	`decision` text NOT NULL,
	`reviewer_name` text NOT NULL,
	`comment` text,
	`created_at` integer NOT NULL,
	FOREIGN KEY (`post_id`) REFERENCES `posts`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE INDEX `post_reviews_post` ON `post_reviews` (`post_id`);--> statement-breakpoint
CREATE TABLE `posts` (
	`id` text PRIMARY KEY NOT NULL,
	`brand_id` text NOT NULL,
	`account_id` text NOT NULL,
	`text` text NOT NULL,
	`media_key` text,
	`media_filename` text,
	`media_content_type` text,
	`networks` text NOT NULL,
	`scheduled_at` integer,
	`state` text NOT NULL,
	`failure` text,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL,
	`submitted_at` integer,
	`decided_at` integer,
	`published_at` integer,
	FOREIGN KEY (`brand_id`) REFERENCES `brands`(`id`) ON UPDATE no action ON DELETE no action,
	FOREIGN KEY (`account_id`) REFERENCES `accounts`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE INDEX `posts_brand` ON `posts` (`brand_id`);--> statement-breakpoint
CREATE INDEX `posts_due` ON `posts` (`state`,`scheduled_at`);