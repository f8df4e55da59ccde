//! A bench run's figures for people: a plain-text table for the terminal
//! and a self-contained HTML page with charts. Both format numbers through
//! [`numbers`], so they read the same.

pub mod html;
mod numbers;
pub mod text;
